/**
 * A Responses conversation's items as listed between pages (GET /v1/conversations/{id}/items,
 * GET /v1/responses/{id}/input_items): the listing the item store keeps for the next page, the
 * id each item is listed under, and a cursor's place. Held by item-store.ts, which decides when
 * a listing is kept, extended or built again.
 */
import { createHash } from 'node:crypto';
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

/**
 * `id` as listed at `place` of a listing: itself, or when an item before it is listed under it
 * (a client may send one id twice), one derived from `salt` and the place. A cursor then names
 * one place: on the later of two, it found the earlier, and a client paging by `after` (the
 * openai SDK's auto-pagination, the Agents SDK's session) was served the same page forever.
 */
function uniqueId(
  seen: { has(id: string): boolean },
  salt: string,
  place: number,
  id: string,
  item: InputItem,
): string {
  let out = id;
  for (let k = 0; seen.has(out); k++) {
    const { id: _own, ...bare } = item as InputItem & { id?: unknown };
    out = listedId(`${salt}#repeat${k}`, place, bare as InputItem);
  }
  return out;
}

/**
 * A conversation's listing kept between pages (listConversation), and what it was built from:
 * turns added since extend it, an item deleted is taken out in place; anything else builds it
 * again. Items stay where they were read, a deleted one marked dead: a count of live items per
 * range (a Fenwick tree) finds the k-th live item and the live place of an id in log time, so a
 * delete costs no rebuild and no shift of the items after it.
 */
export class KeptListing implements Listing {
  /** The conversation's own items (JSON), and how many were deleted from it when last followed. */
  readonly json: string;
  deletions: number;
  readonly missing?: undefined;
  /** Its latest turn when built or extended. */
  last: string | undefined;
  /** Ids past LONG_ID characters, in a StringMap (held apart: protocol/string-set.ts). */
  private long: StringMap<number> | undefined;
  private readonly short = new Map<string, number>();
  /** Fenwick tree over the places, 1-based: tree[i] counts the live ones in (i - lowbit(i), i]. */
  private readonly tree: number[] = [0];
  private readonly dead: Uint8Array[] = [];
  private live = 0;
  /** The places before its own: the base's (0: none). */
  private readonly offset: number;
  /**
   * A response's input items read from its whole chain: the chain's first response (the salt),
   * the conversation it was made in ('': none) and how many of that one's items come first.
   */
  chain?: { readonly root: string; readonly opening: string; readonly openLength: number };
  /** Listings of the store held with this one among their bases (ResponsesItemStore counts its bytes once). */
  holders = 0;

  constructor(
    /** The conversation's every item, deleted ones too, in place order, and their ids (made unique here). */
    private readonly items: InputItem[],
    private readonly ids: string[],
    /** The conversation's id: what an id listed twice is derived from (uniqueId). */
    private readonly salt: string,
    /** A conversation's entry; a response's input items: its json '' and its own id as `last`. */
    held: {
      readonly json: string;
      readonly deleted?: { readonly places: ReadonlySet<number> } | undefined;
      readonly last?: string | undefined;
    },
    /** The responses (turns) it read: one dropped, or an output item of one, makes it stale. */
    readonly turns: Set<string>,
    /** The conversation's JSON bytes (with a base: its own items' only). */
    public bytes: number,
    /**
     * A response's input items listed after an earlier listing of its chain: that listing's
     * first `length` items come first, shared (not parsed, copied or indexed again: a fork, or
     * another response of one chain, rebuilt the whole chain per listing). Never taken out of.
     */
    readonly base?: { readonly listing: KeptListing; readonly length: number },
  ) {
    this.offset = base?.length ?? 0;
    this.json = held.json;
    this.deletions = held.deleted?.places.size ?? 0;
    this.last = held.last;
    const n = ids.length;
    for (let i = 1; i <= n; i++) this.tree.push(1);
    for (let i = 1; i <= n; i++) {
      const j = i + (i & -i);
      if (j <= n) this.tree[j]! += this.tree[i]!;
    }
    this.live = n;
    for (let i = 0; i < n; i++) ids[i] = this.index(ids[i]!, i, items[i]!);
    for (const p of held.deleted?.places ?? []) this.kill(p);
  }

  get length(): number {
    return this.offset + this.live;
  }

  /** The k-th live item (0: the oldest). */
  at(k: number): Listed {
    if (k < this.offset) return this.base!.listing.at(k);
    const p = this.select(k - this.offset + 1);
    return { id: this.ids[p]!, item: this.items[p]! };
  }

  indexOf(id: string): number {
    const p = this.placeOf(id);
    if (p >= 0) return this.offset + this.prefix(p + 1) - 1;
    return this.inBase(id);
  }

  /** The place of `id` among the base's items this listing shows; -1: none. */
  private inBase(id: string): number {
    if (!this.base) return -1;
    const i = this.base.listing.indexOf(id);
    return i < this.offset ? i : -1;
  }

  /** Bases below it (0: none). */
  get depth(): number {
    return this.base ? this.base.listing.depth + 1 : 0;
  }

  /** Its own bytes and its bases'. */
  get totalBytes(): number {
    return this.bytes + (this.base?.listing.totalBytes ?? 0);
  }

  /** Whether it read turn `id` (its own, or a base's: one dropped makes it stale). */
  reads(id: string): boolean {
    return this.turns.has(id) || this.base?.listing.reads(id) === true;
  }

  /** Its listed id (unique: uniqueId). */
  append(id: string, item: InputItem): string {
    const p = this.items.length;
    const listed = this.index(id, p, item);
    this.items.push(item);
    this.ids.push(listed);
    const i = p + 1;
    this.tree.push(1 + this.prefix(i - 1) - this.prefix(i - (i & -i)));
    this.live++;
    return listed;
  }

  /** The place in the conversation of the live item listed under `id`; -1: none. */
  placeOf(id: string): number {
    const p = (id.length <= LONG_ID ? this.short.get(id) : this.long?.get(id)) ?? -1;
    return p < 0 || this.isDead(p) ? -1 : p;
  }

  private isDead(p: number): boolean {
    return ((this.dead[p >> 16]?.[p & 0xffff] ?? 0) & 1) === 1;
  }

  /** Takes the item at place `p` out (as a rebuild leaves it out). */
  kill(p: number): void {
    if (p < 0 || p >= this.items.length || this.isDead(p)) return;
    // Marks in 64 KiB blocks: a listing of a few items holds no large array.
    (this.dead[p >> 16] ??= new Uint8Array(0x10000))[p & 0xffff] = 1;
    for (let i = p + 1; i < this.tree.length; i += i & -i) this.tree[i]!--;
    this.live--;
  }

  /** Live places in [0, i). */
  private prefix(i: number): number {
    let sum = 0;
    for (; i > 0; i -= i & -i) sum += this.tree[i]!;
    return sum;
  }

  /** The place of the k-th live item, 1-based k. */
  private select(k: number): number {
    let at = 0;
    let step = 1;
    while (step * 2 < this.tree.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = at + step;
      if (next < this.tree.length && this.tree[next]! < k) {
        at = next;
        k -= this.tree[next]!;
      }
    }
    return at;
  }

  /** Indexes the item at place `i` under its id made unique; that id. */
  private index(id: string, i: number, item: InputItem): string {
    const unique = uniqueId(this, this.salt, this.offset + i, id, item);
    if (unique.length <= LONG_ID) this.short.set(unique, i);
    else (this.long ??= new StringMap()).set(unique, i);
    return unique;
  }

  /** Whether an item is listed under `id`, deleted or not (uniqueId's `seen`). */
  has(id: string): boolean {
    return (id.length <= LONG_ID ? this.short.has(id) : this.long?.has(id) === true) || this.inBase(id) >= 0;
  }
}

/** Ids past this many characters are indexed by their digest (protocol/string-set.ts). */
export const LONG_ID = 4096;

/**
 * The id a conversation item is listed under: its own, or (an input item sent without one) one
 * derived from the entry that holds it and its place there, so that it is the same on every
 * listing (a cursor, a delete) without rewriting what was kept: the entry's hash, then the place
 * (one hash per entry: one per item was half of listing a large conversation, 160,000 items
 * ~0.5 s).
 */
export function listedId(entry: string, index: number, item: InputItem): string {
  const own = itemId(item);
  if (own !== undefined) return own;
  const prefix = (item as { type?: unknown }).type === 'message' || !('type' in item) ? 'msg' : 'item';
  return `${prefix}_${entryHash(entry)}${index.toString(16).padStart(8, '0')}`;
}

/** The part of a derived id (listedId) that names its entry. */
export function entryHash(entry: string): string {
  if (entry !== hashed.entry) {
    hashed.entry = entry;
    hashed.hex = createHash('sha256').update(entry).digest('hex').slice(0, 40);
  }
  return hashed.hex;
}

/** A derived id (listedId) read back: its entry's hash and its place there; undefined for any other. */
export function derivedPlace(id: string): { hash: string; index: number } | undefined {
  const m = /^(?:msg|item)_([0-9a-f]{40})([0-9a-f]{8,13})$/.exec(id);
  return m ? { hash: m[1]!, index: Number.parseInt(m[2]!, 16) } : undefined;
}

/** The last entry listedId hashed (the items of one entry are listed in a row). */
const hashed = { entry: '', hex: '' };

export function itemId(item: unknown): string | undefined {
  const id = (item as { id?: unknown }).id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}
