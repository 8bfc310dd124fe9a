/**
 * Listings of the Responses store (item-store.ts) kept between pages: a conversation's items
 * (GET /v1/conversations/{id}/items) and a response's input items (GET
 * /v1/responses/{id}/input_items). A page of a conversation read to its end parsed the whole
 * conversation again and scanned it for the cursor (160,000 items: ~1 s of loop a page, pages x
 * conversation to read it all); a listing kept is paged by index, its cursor found by a Map.
 * Bounded: the newest listings whose sources come to at most the store's own budget (their items
 * held parsed: 3.3-4.4x their JSON in heap, the items themselves most of it), at most 8. A listing
 * names what it read (`reads`: turns, the conversation); the store forgets it when one is dropped.
 */
import type { InputItem } from '../../../protocol/responses/types.js';
import { StringMap } from '../../../protocol/string-set.js';

/** An item of a conversation and the id it is listed under. */
export interface Listed {
  id: string;
  item: InputItem;
}

/** A conversation's items as listed, oldest first, and the place of a listed id among them (-1: none). */
export interface Listing {
  readonly length: number;
  /** The item at `k` (0: the oldest). */
  at(k: number): Listed;
  indexOf(id: string): number;
  missing?: undefined;
}

/** What a conversation's listing was built from: a change to any of it builds it again. */
export interface ListingSource {
  /** The conversation's own items (JSON). */
  readonly json: string;
  /** The ids deleted from it (a fresh list per delete). */
  readonly deleted?: readonly string[] | undefined;
  /** Its latest turn. */
  readonly last?: string | undefined;
}

/** Ids past this many characters are indexed by their digest (protocol/string-set.ts). */
const LONG_ID = 4096;

/**
 * A listing kept between pages, and what it was built from: turns added since extend it (a
 * conversation's); any other change builds it again.
 */
export class KeptListing implements Listing {
  readonly json: string;
  readonly deleted: readonly string[] | undefined;
  /** Its latest turn when built or extended. */
  last: string | undefined;
  /** Ids past LONG_ID characters, in a StringMap (held apart: protocol/string-set.ts). */
  private long: StringMap<number> | undefined;
  private readonly short = new Map<string, number>();

  constructor(
    private readonly items: InputItem[],
    private readonly ids: string[],
    source: ListingSource,
    /** The entries (responses, a conversation) it read: one dropped, or an item of one, makes it stale. */
    readonly reads: Set<string>,
    /** The JSON bytes it was built from. */
    public bytes: number,
  ) {
    this.json = source.json;
    this.deleted = source.deleted;
    this.last = source.last;
    for (let i = 0; i < ids.length; i++) this.index(ids[i]!, i);
  }

  get length(): number {
    return this.items.length;
  }

  at(k: number): Listed {
    return { id: this.ids[k]!, item: this.items[k]! };
  }

  indexOf(id: string): number {
    return (id.length <= LONG_ID ? this.short.get(id) : this.long?.get(id)) ?? -1;
  }

  append(id: string, item: InputItem): void {
    this.index(id, this.items.length);
    this.items.push(item);
    this.ids.push(id);
  }

  /** Whether it was built from `source` as it is now, turns added since aside. */
  builtFrom(source: ListingSource): boolean {
    return this.json === source.json && this.deleted === source.deleted;
  }

  /** The first place of each id. */
  private index(id: string, i: number): void {
    if (id.length <= LONG_ID) {
      if (!this.short.has(id)) this.short.set(id, i);
    } else if (!(this.long ??= new StringMap()).has(id)) this.long.set(id, i);
  }
}

/** Listings kept between pages, at most. */
const MAX_LISTINGS = 8;

/** The listings kept, by key, the least recently read first, within `maxBytes` of their sources. */
export class KeptListings {
  private readonly kept = new Map<string, KeptListing>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get size(): number {
    return this.kept.size;
  }

  /** The listing kept under `key`, made the most recently read. */
  get(key: string): KeptListing | undefined {
    const listing = this.kept.get(key);
    if (!listing) return undefined;
    this.kept.delete(key);
    this.kept.set(key, listing);
    return listing;
  }

  /** `listing` (kept under `key`) grew by `bytes` (turns appended): the oldest go past the budget. */
  grew(key: string, bytes: number): void {
    const listing = this.kept.get(key);
    if (!listing) return;
    listing.bytes += bytes;
    this.bytes += bytes;
    if (this.bytes > this.maxBytes) this.remember(key, listing);
  }

  /** Keeps `listing` under `key` for the next page; the oldest go past the budget or the count. */
  remember(key: string, listing: KeptListing): void {
    this.forget(key);
    if (listing.bytes > this.maxBytes) return;
    this.kept.set(key, listing);
    this.bytes += listing.bytes;
    for (const [oldest] of this.kept) {
      if (this.bytes <= this.maxBytes && this.kept.size <= MAX_LISTINGS) break;
      this.forget(oldest);
    }
  }

  forget(key: string): void {
    const listing = this.kept.get(key);
    if (!listing) return;
    this.kept.delete(key);
    this.bytes -= listing.bytes;
  }

  /** Forgets each listing that read entry `id` (a turn, a conversation). */
  stale(id: string): void {
    for (const [key, listing] of this.kept) if (listing.reads.has(id)) this.forget(key);
  }
}
