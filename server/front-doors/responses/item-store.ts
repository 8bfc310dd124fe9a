/**
 * What the Responses door keeps of the responses this process returned, per API key:
 * - each output item, by id, so that an `item_reference` to one resolves: `@ai-sdk/openai`
 *   (store: true, its default) sends earlier assistant text, reasoning and custom tool calls back
 *   as references;
 * - each response's place in its conversation, by response id, so that a request naming it as
 *   `previous_response_id` continues it (the openai SDK's and the Agents SDK's server-side state):
 *   the link to the response it continued, the input items its request brought (as sent; an
 *   item_reference among them stays a reference) and the ids of its output items. A turn holds
 *   only its own new items: the conversation is never copied whole per turn. A request that sent
 *   the whole conversation itself (no previous_response_id) and ends what it sent with the last
 *   output of a kept response whose conversation has as many items is linked to that response in
 *   the same way, its earlier items taken to be that conversation.
 *
 * One budget for both (TOOLPROOF_RESPONSES_STORE_MB): each item and each response is held as JSON
 * text and counted at its UTF-8 length plus a fixed overhead; past the budget the oldest entry of
 * the key holding the most bytes goes first, so one busy key evicts its own before a quiet key's.
 * Continuing a conversation makes its responses and their items the newest again, so a session
 * in use outlives idle ones. Per process: with TOOLPROOF_WORKERS > 1 a request for another
 * worker's state is carried to it (server/worker-relay.ts); one another replica served, one
 * evicted, or one from before a restart misses.
 */
import { randomBytes } from 'node:crypto';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import type { ItemLookup } from '../../../protocol/responses/items.js';
import type { InputItem, OutputItem } from '../../../protocol/responses/types.js';
import { BusiestFirst } from '../../busiest-first.js';
import { WriteOrder } from '../../write-order.js';
import {
  derivedPlace,
  entryHash,
  itemId,
  KeptListing,
  type Listed,
  type Listing,
  listedId,
} from './kept-listing.js';

export type { Listed, Listing } from './kept-listing.js';

/** Map entry, id and bookkeeping, beyond the JSON text itself. */
const ENTRY_OVERHEAD_BYTES = 128;

interface Kept {
  readonly id: string;
  readonly kind: 'item' | 'response' | 'conversation';
  /** The API key it was returned to ('' when no keys are configured). */
  readonly scope: string;
  /** Dropped (evicted, kept again, or moved to the newest): skipped where the write order holds it. */
  gone: boolean;
  /**
   * An item: its JSON. A response: the JSON array of the input items its request brought. A
   * conversation: the JSON array of the items it was created with.
   */
  readonly json: string;
  readonly bytes: number;
  /** An item: the response that returned it. */
  readonly response?: string;
  /** A response: the response it continued. */
  readonly prev?: string;
  /** A response: its output items' ids, in order. */
  readonly outputIds?: readonly string[];
  /** A response: the items of its whole conversation (input and output, all turns). */
  readonly count?: number;
  /** A conversation: its latest response (the next request in it continues that one). */
  last?: string;
  /** A response that was streamed: its live stream's numbering (protocol/responses/replay.ts). */
  readonly numbering?: Uint32Array;
  /** A response: the conversation it was made in (`conversation` on its request). */
  conversation?: string;
  /**
   * A response: its response object without `output` (JSON), for GET /v1/responses/{id}; absent
   * for the turns that POST /v1/conversations/{id}/items adds. A conversation: its `created_at`
   * and `metadata` (JSON).
   */
  readonly envelope?: string;
  /**
   * A conversation: its items deleted since (DELETE .../items/{item_id}), by their place in it
   * (its own items, then each turn's: a place never moves), one set shared by its revisions (it
   * only grows; a copy per delete cost the deletes so far).
   */
  readonly deleted?: Deleted;
  /**
   * A response: its chain's mark, one object shared by every response of one chain and its forks
   * (from the first): `broken` once any of them or an output item of one was dropped (evicted,
   * deleted, kept again), or a link was not held when it was kept (inputItemsTail).
   */
  readonly tag?: ChainTag;
  /**
   * A response: every item of its chain, through its own output, is listed under its own id or
   * one derived from its turn, none twice: no id listed twice, so a listing's ids need no look
   * at the items before them (inputItemsTail). Its request brought no item with an id, and its
   * output ids were not held before and look like no derived id.
   */
  readonly clean?: boolean;
  /**
   * A response: its place in its chain (0: the first) and an earlier response of it to skip to
   * (Myers' jump pointers: any earlier one is reached in log steps), for a page of a clean
   * chain's input items read from anywhere (inputItemsPaged).
   */
  readonly depth?: number;
  readonly jump?: string;
  /** A clean response whose request brought items: the hash their derived ids carry (entryHash). */
  readonly hash?: string;
}

interface ChainTag {
  broken: boolean;
}

/** An id listedId derives (an output id so made is taken as clashing with one: `clean`). */
const DERIVED_ID = /^(msg|item)_[0-9a-f]{48,}$/;

/** The places of the items deleted from a conversation, and the bytes they are counted at. */
interface Deleted {
  readonly places: Set<number>;
  bytes: number;
}

/** What an entry of the derived-hash index is counted at, beside its strings. */
const DERIVED_ENTRY_BYTES = 64;

/** What a deleted place is counted at. */
const DELETED_BYTES = 24;

/** A conversation's own fields (GET /v1/conversations/{id}). */
export interface ConversationMeta {
  created_at: number;
  metadata: Record<string, unknown>;
}

/** What a response's input items are kept under among the listings (no conversation id starts so). */
const INPUT_ITEMS = 'input_items:';

/** Listings kept between pages, at most. */
const MAX_LISTINGS = 8;

/** Listings a response's input items are read through, at most (sharedInputItems). */
const MAX_BASES = 4;

/** A conversation to continue, or the response id the walk could not find. */
export type Conversation =
  | { items: InputItem[]; bytes: number; turns: number; missing?: undefined }
  | { missing: string };

export class ResponsesItemStore {
  private readonly items = new Map<string, Kept>();
  private readonly responses = new Map<string, Kept>();
  private readonly conversations = new Map<string, Kept>();
  /** Each scope's entries, oldest first (server/write-order.ts: a Map's would walk its dropped slots), and bytes. */
  private readonly scopes = new Map<string, Scope>();
  /** The scopes by their bytes, the busiest first. */
  private readonly busiest = new BusiestFirst<Scope>((s) => s.bytes);
  private used = 0;
  /** Conversations as last listed, by id, the least recently read first (listConversation). */
  private readonly listings = new Map<string, KeptListing>();
  private listingBytes = 0;
  /** Clean responses by the hash their brought items' derived ids carry (inputItemsPaged's cursor). */
  private readonly derived = new Map<string, string>();

  constructor(readonly maxBytes: number) {}

  /** Bytes counted for what is held now. */
  get bytes(): number {
    return this.used;
  }

  /** Output items held. */
  get size(): number {
    return this.items.size;
  }

  /** Responses held (their conversations' links). */
  get responseCount(): number {
    return this.responses.size;
  }

  /** Keeps a response's output items under `scope`, evicting the oldest past the budget. */
  keep(scope: string, output: readonly OutputItem[], response?: string): void {
    for (const item of output) {
      const id = itemId(item);
      if (id === undefined) continue;
      const json = JSON.stringify(item);
      const bytes = Buffer.byteLength(json) + id.length + ENTRY_OVERHEAD_BYTES;
      this.add({ id, kind: 'item', scope, gone: false, json, bytes, ...(response ? { response } : {}) });
    }
  }

  /**
   * Keeps response `id`: its output items, and its place in its conversation (`prev`, the
   * response its request named as previous_response_id; `input`, the items that request brought).
   */
  keepResponse(
    scope: string,
    id: string,
    prev: string | undefined,
    input: readonly InputItem[],
    output: readonly OutputItem[],
    /** Whether `input` is a whole conversation (no previous_response_id, no conversation). */
    whole = prev === undefined,
    /**
     * `envelope`: the response object without `output` (GET /v1/responses/{id}); `numbering`:
     * its live stream's, when it was streamed (GET /v1/responses/{id}?stream=true).
     */
    { envelope, numbering }: { envelope?: string; numbering?: Uint32Array | undefined } = {},
  ): boolean {
    let link = prev === undefined ? undefined : this.responses.get(prev);
    let brought = input;
    if (prev === undefined && whole) {
      const earlier = this.continued(scope, input);
      if (earlier) {
        link = earlier;
        brought = input.slice(earlier.count);
      }
    } else if (link?.scope !== scope) link = undefined;
    const linked = prev === undefined ? link?.id : prev;
    const tag = linked === undefined ? { broken: false } : (link?.tag ?? { broken: true });
    const clean = (linked === undefined || link?.clean === true) && this.cleanTurn(brought, output);
    this.keep(scope, output, id);
    const outputIds: string[] = [];
    let idBytes = id.length;
    for (const item of output) {
      const oid = itemId(item);
      if (oid === undefined) continue;
      outputIds.push(oid);
      idBytes += oid.length + 16;
    }
    const json = stringifyJson(brought);
    const hash = clean && brought.length > 0 ? entryHash(id) : undefined;
    const bytes =
      (hash === undefined ? 0 : hash.length + id.length + DERIVED_ENTRY_BYTES) +
      Buffer.byteLength(json) +
      (envelope ? Buffer.byteLength(envelope) : 0) +
      (numbering?.byteLength ?? 0) +
      idBytes +
      ENTRY_OVERHEAD_BYTES;
    const count = (link?.count ?? 0) + brought.length + outputIds.length;
    // A continued response no longer held keeps no link: naming this one misses as that one did.
    const added = this.add({
      id,
      kind: 'response',
      scope,
      gone: false,
      json,
      bytes,
      outputIds,
      count,
      tag,
      clean,
      ...this.jumpFrom(link),
      ...(hash !== undefined ? { hash } : {}),
      ...(linked !== undefined ? { prev: linked } : {}),
      ...(envelope !== undefined ? { envelope } : {}),
      ...(envelope !== undefined && numbering !== undefined ? { numbering } : {}),
    });
    if (added && hash !== undefined) this.derived.set(hash, id);
    return added;
  }

  /** A new response's place after `link` in its chain and its jump (Myers' skew-binary rule). */
  private jumpFrom(link: Kept | undefined): { depth: number; jump?: string } {
    if (!link) return { depth: 0 };
    const depth = (link.depth ?? 0) + 1;
    const j = link.jump === undefined ? undefined : this.responses.get(link.jump);
    const jj = j?.jump === undefined ? undefined : this.responses.get(j.jump);
    if (j && jj && (link.depth ?? 0) - (j.depth ?? 0) === (j.depth ?? 0) - (jj.depth ?? 0))
      return { depth, jump: jj.id };
    return { depth, jump: link.id };
  }

  /** Response `id`'s live stream numbering, when it was streamed and is held under `scope`. */
  streamNumbering(scope: string, id: string): Uint32Array | undefined {
    const kept = this.responses.get(id);
    return kept?.scope === scope ? kept.numbering : undefined;
  }

  /**
   * Response `id` as it was returned (its envelope, its output items still held), when it was
   * returned under `scope`; not made the newest (a poll is not a turn).
   */
  response(scope: string, id: string): Record<string, unknown> | undefined {
    const kept = this.responses.get(id);
    if (!kept || kept.scope !== scope || kept.envelope === undefined) return undefined;
    const output: unknown[] = [];
    for (const oid of kept.outputIds ?? []) {
      const item = this.items.get(oid);
      if (item) output.push(JSON.parse(item.json));
    }
    return { ...(JSON.parse(kept.envelope) as Record<string, unknown>), output };
  }

  /**
   * The input items response `id` was made from (GET /v1/responses/{id}/input_items), oldest
   * first, each with its listed id: its conversation before its own output (the turns its
   * previous_response_id chain brought and answered, then what its request brought). With an
   * earlier response of the chain no longer held, what its own request brought. Made in a
   * conversation still held, the items it was created with come first (those deleted from it
   * left out): before, they were missing. Undefined when the response is not held under
   * `scope`; not made the newest (a listing is not a turn).
   */
  inputItems(scope: string, id: string): Listing | undefined {
    const kept = this.responses.get(id);
    if (!kept || kept.scope !== scope || kept.envelope === undefined) return undefined;
    const started = kept.conversation === undefined ? undefined : this.conversations.get(kept.conversation);
    const opening = started?.scope === scope ? started : undefined;
    const deletions = opening?.deleted?.places.size ?? 0;
    // Kept between pages beside the conversations' listings (a page read the whole chain again:
    // pages x chain to read it all); a response's input never changes but by a turn dropped, or
    // an item deleted from the conversation it was made in.
    const key = `${INPUT_ITEMS}${id}`;
    const memo = this.listings.get(key);
    if (memo && memo.deletions === deletions) {
      this.listings.delete(key);
      this.listings.set(key, memo);
      return memo;
    }
    const shared = this.sharedInputItems(kept, opening?.id ?? '', deletions);
    if (shared) {
      this.remember(key, shared);
      return shared;
    }
    let ids: string[] = [];
    const found = this.conversation(scope, id, false, Number.POSITIVE_INFINITY, ids);
    const turns = new Set<string>([id]);
    let listing: KeptListing;
    if (found.missing !== undefined) {
      const brought = JSON.parse(kept.json) as InputItem[];
      const own = brought.map((item, j) => listedId(id, j, item));
      listing = new KeptListing(brought, own, id, { json: '', last: id }, turns, kept.json.length);
    } else {
      let root = id;
      let items = found.items;
      let bytes = found.bytes;
      const n = items.length - (kept.outputIds?.length ?? 0);
      items.length = n;
      ids.length = n;
      for (
        let r: string | undefined = kept.prev;
        r !== undefined && !turns.has(r);
        r = this.responses.get(r)?.prev
      ) {
        turns.add(r);
        root = r;
      }
      let openLength = 0;
      if (opening) {
        // The conversation's own items come first, as it lists them (by place: a place never moves).
        const own = JSON.parse(opening.json) as InputItem[];
        const ownItems: InputItem[] = [];
        const ownIds: string[] = [];
        for (let j = 0; j < own.length; j++) {
          if (opening.deleted?.places.has(j)) continue;
          ownItems.push(own[j]!);
          ownIds.push(listedId(opening.id, j, own[j]!));
        }
        items = ownItems.concat(items);
        ids = ownIds.concat(ids);
        bytes += opening.json.length;
        turns.add(opening.id);
        openLength = ownItems.length;
      }
      // Salted by the chain's first response: an id listed twice derives the same id in every
      // listing of the chain, built whole or after another (sharedInputItems).
      listing = new KeptListing(items, ids, root, { json: '', last: id }, turns, bytes);
      listing.chain = { root, opening: opening?.id ?? '', openLength };
    }
    listing.deletions = deletions;
    this.remember(key, listing);
    return listing;
  }

  /**
   * Response `id`'s input items as inputItems lists them, for a page read from anywhere (`order`
   * either way, a cursor or none): when its chain is intact and `clean` (every id listed once, as
   * its own), only the turns the page reaches are parsed, each found from its own by the jumps
   * (log steps: jumpFrom) and the counts; a cursor's place is read from the id itself (an output
   * id: the turn that returned it; a derived one: the turn its hash names) and checked. The first
   * page of a response of a long chain cost the whole chain parsed (0.5-1.25 s at ~60-121k
   * items), and a page with a cursor or `order=asc` built the listing whole, kept among 8: a
   * client cycling through 9 such responses paid the chain on every page. Otherwise inputItems.
   */
  inputItemsPaged(scope: string, id: string): Listing | undefined {
    const kept = this.responses.get(id);
    if (
      !kept ||
      kept.scope !== scope ||
      kept.envelope === undefined ||
      kept.conversation !== undefined ||
      kept.clean !== true ||
      kept.tag?.broken !== false ||
      this.listings.has(`${INPUT_ITEMS}${id}`)
    )
      return this.inputItems(scope, id);
    const length = (kept.count ?? 0) - (kept.outputIds?.length ?? 0);
    const startOf = (t: Kept) => (t.prev === undefined ? 0 : (this.responses.get(t.prev)?.count ?? 0));
    /** The turn of the chain holding place `k` (< length): the earliest whose count passes it. */
    const turnAt = (k: number): Kept => {
      let at = kept;
      while (startOf(at) > k) {
        const jump = at.jump === undefined ? undefined : this.responses.get(at.jump);
        at = jump !== undefined && (jump.count ?? 0) > k ? jump : this.responses.get(at.prev!)!;
      }
      return at;
    };
    /** The turn read last, where its items start, and them. */
    let turn: Kept | undefined;
    let start = 0;
    let items: InputItem[] = [];
    let ids: string[] = [];
    const at = (k: number): Listed => {
      if (k < 0 || k >= length) throw new RangeError(`input item ${k} of ${length}`);
      if (turn === undefined || k < start || k >= start + items.length) {
        turn = turnAt(k);
        start = startOf(turn);
        items = [];
        ids = [];
        this.turnItems(turn, false, items, ids);
      }
      return { id: ids[k - start]!, item: items[k - start]! };
    };
    /** Place `k` if it holds `item` listed as `listed`, within turn `t` of this chain; else -1. */
    const confirmed = (t: Kept, k: number, listed: string): number =>
      k >= 0 && k < length && turnAt(k) === t && at(k).id === listed ? k : -1;
    return {
      length,
      at,
      indexOf: (listed) => {
        const out = this.items.get(listed);
        if (out?.response !== undefined) {
          const t = this.responses.get(out.response);
          const place = t?.outputIds?.indexOf(listed) ?? -1;
          if (!t || t === kept || place < 0) return -1;
          return confirmed(t, (t.count ?? 0) - t.outputIds!.length + place, listed);
        }
        const derived = derivedPlace(listed);
        const owner = derived === undefined ? undefined : this.derived.get(derived.hash);
        const t = owner === undefined ? undefined : this.responses.get(owner);
        if (!t || !derived) return -1;
        return confirmed(t, startOf(t) + derived.index, listed);
      },
    };
  }

  /**
   * Whether a turn's own items are listed under ids none of its chain's can be: `brought`
   * (its request's) with no id of their own (derived from the turn), its output's ids held by
   * no other item, none twice, none like a derived one.
   */
  private cleanTurn(brought: readonly InputItem[], output: readonly OutputItem[]): boolean {
    for (const item of brought) if (itemId(item) !== undefined) return false;
    const seen = new Set<string>();
    for (const item of output) {
      const oid = itemId(item);
      if (oid === undefined) continue;
      if (seen.has(oid) || this.items.has(oid) || DERIVED_ID.test(oid)) return false;
      seen.add(oid);
    }
    return true;
  }

  /**
   * Response `kept`'s input items after a kept listing of its chain, when one is held (made in
   * the same conversation, with the same deletions): the items up to the last turn both read,
   * shared, then the turns since, read here. A fork (two responses continuing one) or another
   * response of the same chain then costs its own turns and a walk of the links, not the whole
   * chain parsed again, and the shared part is counted once against the budget. At most
   * MAX_BASES listings deep (each page reads through them); past that, built whole.
   */
  private sharedInputItems(kept: Kept, opening: string, deletions: number): KeptListing | undefined {
    const bases: KeptListing[] = [];
    for (const [key, memo] of this.listings)
      if (
        key.startsWith(INPUT_ITEMS) &&
        memo.chain?.opening === opening &&
        memo.deletions === deletions &&
        memo.depth < MAX_BASES
      )
        bases.push(memo);
    if (bases.length === 0) return undefined;
    // The turns from `kept` back to the latest one a listing read (the walk a whole build makes too).
    const since: Kept[] = [];
    for (let at: string | undefined = kept.id; at !== undefined; ) {
      const response = this.responses.get(at);
      if (!response || response.scope !== kept.scope || since.length > this.responses.size) return undefined;
      const base = bases.find((b) => this.covers(b, response));
      if (base) return this.after(kept, base, response, since);
      since.push(response);
      at = response.prev;
    }
    return undefined;
  }

  /**
   * Whether `listing` holds turn `r` of its chain (with its output, but where `r` is the
   * listing's own response): among its own turns, or within the part of a base it shows (a
   * base read further, into a branch this listing is not on).
   */
  private covers(listing: KeptListing, r: Kept): boolean {
    for (let at: KeptListing | undefined = listing; at; at = at.base?.listing) {
      if (at.turns.has(r.id)) return true;
      if (!at.base || (at.chain?.openLength ?? 0) + (r.count ?? 0) > at.base.length) return false;
    }
    return false;
  }

  /**
   * `kept`'s input items: `base`'s up to the end of turn `shared` (both read it), then the turns
   * `since` (newest first; `kept` the first, its own output left out). Undefined when `base` does
   * not hold that turn where the counts place it.
   */
  private after(
    kept: Kept,
    base: KeptListing,
    shared: Kept,
    since: readonly Kept[],
  ): KeptListing | undefined {
    const chain = base.chain!;
    const outputs = shared.outputIds ?? [];
    // The listing stops before the shared turn's output: `kept`'s own, or one the base's own
    // response ends before (read here, after it).
    const before = shared === kept || base.last === shared.id;
    const length = chain.openLength + (shared.count ?? 0) - (before ? outputs.length : 0);
    if (length > base.length || length < chain.openLength) return undefined;
    // The count places the turn's end; its last output's id there confirms it.
    if (!before && outputs.length > 0 && base.indexOf(outputs.at(-1)!) !== length - 1) return undefined;
    const items: InputItem[] = [];
    const ids: string[] = [];
    let bytes = 0;
    if (before && shared !== kept) {
      for (const oid of outputs) bytes += this.items.get(oid)?.json.length ?? 0;
      this.outputItems(shared, items, ids);
    }
    for (let i = since.length - 1; i >= 0; i--) {
      const turn = since[i]!;
      bytes += turn.json.length;
      for (const oid of turn.outputIds ?? []) bytes += this.items.get(oid)?.json.length ?? 0;
      this.turnItems(turn, false, items, ids);
    }
    if (shared !== kept) {
      const n = items.length - (kept.outputIds?.length ?? 0);
      items.length = n;
      ids.length = n;
    }
    const turns = new Set<string>([kept.id, ...since.map((t) => t.id)]);
    const listing = new KeptListing(items, ids, chain.root, { json: '', last: kept.id }, turns, bytes, {
      listing: base,
      length,
    });
    listing.deletions = base.deletions;
    listing.chain = chain;
    return listing;
  }

  /** Forgets response `id` and its output items (DELETE /v1/responses/{id}); false when not held. */
  deleteResponse(scope: string, id: string): boolean {
    const kept = this.responses.get(id);
    if (!kept || kept.scope !== scope || kept.envelope === undefined) return false;
    for (const oid of kept.outputIds ?? []) {
      const item = this.items.get(oid);
      if (item && item.response === id) this.drop(item);
    }
    this.drop(kept);
    return true;
  }

  /**
   * The kept response a whole conversation `input` continues: its last item is the last output
   * item of a response of `scope` whose conversation had exactly the items before it.
   */
  private continued(scope: string, input: readonly InputItem[]): Kept | undefined {
    for (let k = input.length - 1; k >= 0; k--) {
      const raw = input[k] as unknown;
      if (raw === null || typeof raw !== 'object') continue;
      const id = itemId(raw);
      if (id === undefined) continue;
      const item = this.items.get(id);
      if (!item || item.scope !== scope || item.response === undefined) return undefined;
      const response = this.responses.get(item.response);
      const ids = response?.outputIds;
      if (!response || !ids || ids[ids.length - 1] !== id || response.count !== k + 1) return undefined;
      return response;
    }
    return undefined;
  }

  /**
   * The item `id` as it was returned (a fresh copy), and its JSON size, when it was returned
   * under `scope` and is still held.
   */
  lookup(scope: string, id: string): { item: InputItem; bytes: number } | undefined {
    const kept = this.items.get(id);
    if (!kept || kept.scope !== scope) return undefined;
    return { item: JSON.parse(kept.json) as InputItem, bytes: kept.json.length };
  }

  /** The item `id` as it was returned, as JSON text, when it was returned under `scope` and is still held. */
  lookupJson(scope: string, id: string): string | undefined {
    const kept = this.items.get(id);
    return kept && kept.scope === scope ? kept.json : undefined;
  }

  /**
   * item_reference -> the item kept under `scope`, for one request: what its references resolve
   * to counted, with `already` (the bytes of the conversation it continues), against
   * `limitBytes`; past it `over()` is thrown. Bounded so: a few KB of references to one large
   * item would otherwise expand into gigabytes.
   */
  references(
    scope: string,
    limitBytes: number,
    over: () => Error,
    already = 0,
    seen?: (found: boolean) => void,
  ): ItemLookup {
    let total = already;
    return (id) => {
      const found = this.lookup(scope, id);
      seen?.(found !== undefined);
      if (!found) return undefined;
      total += found.bytes;
      if (total > limitBytes) throw over();
      return found.item;
    };
  }

  /**
   * The conversation response `id` ended, oldest first, for a request that continues it: each
   * turn's input items, then its output items (one evicted since: an item_reference to it, which
   * becomes the note any reference that misses becomes), and the JSON bytes of all. The walk visits each response of the chain once; its
   * responses and their items become the newest (not with `touch` false: the inspector's read).
   * `missing`: the response, or one before it in its chain, is not held under `scope`. Past
   * `limitBytes`, only its bytes as far as the walk went (the turns past the limit, a miss
   * among them, not looked at; no items, nothing made the newest): the caller refuses it.
   */
  conversation(
    scope: string,
    id: string,
    touch = true,
    limitBytes = Number.POSITIVE_INFINITY,
    /** Receives each item's listed id (listedId), in order. */
    ids?: string[],
  ): Conversation {
    const chain: Kept[] = [];
    let bytes = 0;
    for (let at: string | undefined = id; at !== undefined; ) {
      const response = this.responses.get(at);
      if (!response || response.scope !== scope) return { missing: at };
      chain.push(response);
      bytes += response.json.length;
      for (const oid of response.outputIds ?? []) bytes += this.items.get(oid)?.json.length ?? 0;
      // A chain links only to responses kept before it, so it ends; the bound is a guard.
      if (chain.length > this.responses.size) return { missing: at };
      // Counted before any of it is parsed: the caller refuses it by its bytes, known past the
      // limit here. Walked on, a few bytes naming a chain of the whole store cost all of it, for
      // each request and each inspector record naming it (an export: records x chain).
      if (bytes > limitBytes) return { items: [], bytes, turns: chain.length };
      at = response.prev;
    }
    const items: InputItem[] = [];
    for (let i = chain.length - 1; i >= 0; i--) this.turnItems(chain[i]!, touch, items, ids);
    return { items, bytes, turns: chain.length };
  }

  /**
   * One turn's items, pushed to `items`: its input items, then its output items (one evicted
   * since: an item_reference to it); their listed ids to `ids`. The turn and its items become
   * the newest with `touch`.
   */
  private turnItems(kept: Kept, touch: boolean, items: InputItem[], ids?: string[]): void {
    const response = touch ? this.touch(kept) : kept;
    const brought = JSON.parse(response.json) as InputItem[];
    for (let j = 0; j < brought.length; j++) {
      items.push(brought[j]!);
      ids?.push(listedId(response.id, j, brought[j]!));
    }
    this.outputItems(response, items, ids, touch);
  }

  /** A turn's output items, pushed as turnItems pushes them. */
  private outputItems(response: Kept, items: InputItem[], ids?: string[], touch = false): void {
    for (const oid of response.outputIds ?? []) {
      ids?.push(oid);
      const item = this.items.get(oid);
      if (item) items.push(JSON.parse((touch ? this.touch(item) : item).json) as InputItem);
      else items.push({ type: 'item_reference', id: oid } as InputItem);
    }
  }

  /**
   * `memo` brought up to conversation `held`'s latest turn when only turns were added since
   * (POST .../items, a turn answered): their items appended, each turn read once. False when
   * anything else changed (a turn not held, the chain not reaching the memo's): built anew.
   */
  private extend(memo: KeptListing, held: Kept): boolean {
    const added: Kept[] = [];
    let bytes = 0;
    for (let at = held.last; at !== memo.last; ) {
      const response = at === undefined ? undefined : this.responses.get(at);
      if (!response || response.scope !== held.scope || added.length >= this.responses.size) return false;
      added.push(response);
      bytes += response.json.length;
      for (const oid of response.outputIds ?? []) bytes += this.items.get(oid)?.json.length ?? 0;
      at = response.prev;
    }
    const items: InputItem[] = [];
    const ids: string[] = [];
    for (let i = added.length - 1; i >= 0; i--) this.turnItems(added[i]!, false, items, ids);
    // New places: none of them deleted yet.
    for (let i = 0; i < items.length; i++) memo.append(ids[i]!, items[i]!);
    for (const r of added) memo.turns.add(r.id);
    memo.last = held.last;
    this.listingBytes += bytes;
    memo.bytes += bytes;
    return true;
  }

  /**
   * Opens conversation `id` (POST /v1/conversations) under `scope`, with the items it starts
   * with. False when they are larger than the whole budget.
   */
  openConversation(
    scope: string,
    id: string,
    items: readonly InputItem[],
    meta: ConversationMeta = { created_at: 0, metadata: {} },
  ): boolean {
    const json = stringifyJson(items);
    const envelope = stringifyJson(meta);
    const bytes =
      Buffer.byteLength(json) + Buffer.byteLength(envelope) + id.length * 2 + ENTRY_OVERHEAD_BYTES;
    return this.add({ id, kind: 'conversation', scope, gone: false, json, bytes, envelope });
  }

  /** Conversation `id`'s own fields, when held under `scope`. */
  conversationMeta(scope: string, id: string): ConversationMeta | undefined {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope || kept.envelope === undefined) return undefined;
    return JSON.parse(kept.envelope) as ConversationMeta;
  }

  /**
   * Conversation `id` kept again with `change` (new metadata, an item deleted): a fresh entry,
   * counted anew, its listing kept (an item deleted is taken out of it). False when not held
   * under `scope`, or past the whole budget.
   */
  private reviseConversation(
    scope: string,
    id: string,
    /** `deleted`: an item's place in the conversation (KeptListing.placeOf). */
    change: { metadata?: Record<string, unknown>; deleted?: number },
  ): boolean {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope) return false;
    const meta = JSON.parse(kept.envelope ?? '{}') as ConversationMeta;
    if (change.metadata) meta.metadata = change.metadata;
    const envelope = stringifyJson(meta);
    const added =
      change.deleted === undefined || kept.deleted?.places.has(change.deleted) ? 0 : DELETED_BYTES;
    const bytes =
      Buffer.byteLength(kept.json) +
      Buffer.byteLength(envelope) +
      id.length * 2 +
      ENTRY_OVERHEAD_BYTES +
      (kept.deleted?.bytes ?? 0) +
      added;
    if (bytes > this.maxBytes) return false;
    const deletions = kept.deleted?.places.size ?? 0;
    let deleted = kept.deleted;
    if (change.deleted !== undefined && added > 0) {
      deleted ??= { places: new Set(), bytes: 0 };
      deleted.places.add(change.deleted);
      deleted.bytes += added;
    }
    const fresh: Kept = {
      id,
      kind: 'conversation',
      scope,
      gone: false,
      json: kept.json,
      bytes,
      envelope,
      ...(deleted ? { deleted } : {}),
      ...(kept.last !== undefined ? { last: kept.last } : {}),
    };
    const memo = this.listings.get(id);
    const ok = this.add(fresh);
    // Still kept when nothing it read was evicted to make room (drop: staled).
    if (memo && this.listings.get(id) === memo && added > 0) {
      if (memo.deletions === deletions) {
        memo.kill(change.deleted!);
        memo.deletions = deleted!.places.size;
      } else this.forget(id);
    }
    return ok;
  }

  /** Sets conversation `id`'s metadata (POST /v1/conversations/{id}). */
  updateConversation(scope: string, id: string, metadata: Record<string, unknown>): boolean {
    return this.reviseConversation(scope, id, { metadata });
  }

  /**
   * Deletes item `itemId` from conversation `id` (DELETE .../items/{item_id}): it is listed and
   * sent upstream no more. False when the conversation or the item is not held.
   */
  deleteConversationItem(scope: string, id: string, itemId: string): boolean {
    const listed = this.keptListing(scope, id);
    const place = listed.missing === undefined ? listed.placeOf(itemId) : -1;
    if (place < 0) return false;
    return this.reviseConversation(scope, id, { deleted: place });
  }

  /**
   * Adds `items` to conversation `id` after its latest turn (POST .../items): kept as a turn with
   * no output, which the next request naming the conversation continues. Their listed ids; or
   * `missing`, or `tooLarge` when they are larger than the whole budget.
   */
  addConversationItems(
    scope: string,
    id: string,
    items: readonly InputItem[],
  ):
    | { items: Listed[]; missing?: undefined; tooLarge?: undefined }
    | { missing: string; tooLarge?: undefined }
    | { tooLarge: true; missing?: undefined } {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope) return { missing: id };
    const turn = `${id}_items_${randomBytes(8).toString('hex')}`;
    if (!this.keepResponse(scope, turn, kept.last, items, [], false)) return { tooLarge: true };
    this.advanceConversation(scope, id, turn);
    // Items sent without an id are listed under ids derived from this turn's (random) id, which
    // no earlier item can have; one sent with its own id is listed as the listing says (one an
    // earlier item has is listed as another: uniqueId), which is built for it when not kept.
    if (!items.some((item) => itemId(item) !== undefined))
      return { items: items.map((item, j) => ({ id: listedId(turn, j, item), item })) };
    const listed = this.listConversation(scope, id);
    if (listed.missing !== undefined) return { missing: listed.missing };
    const from = listed.length - items.length;
    return { items: items.map((item, j) => ({ id: listed.at(from + j).id, item })) };
  }

  /**
   * Conversation `id`'s items as listed (GET .../items): each with its listed id, deleted ones
   * left out, oldest first, and where an id is among them; not made the newest (a listing is not
   * a turn). Kept between pages (`listings`): a page of a conversation read to its end parsed the
   * whole conversation again and scanned it for the cursor (160,000 items: ~1 s of loop a page,
   * pages x conversation to read it all). Turns added since (POST .../items, a turn answered)
   * extend it, read once each: a page after each added item cost the whole conversation again.
   * An item deleted is taken out of it in place (deleteConversationItem: each delete built it
   * again, 160,000 items ~1 s a delete). Built again once one of its entries is dropped.
   */
  listConversation(scope: string, id: string): Listing | { missing: string } {
    return this.keptListing(scope, id);
  }

  private keptListing(scope: string, id: string): KeptListing | { missing: string } {
    const held = this.conversations.get(id);
    if (!held || held.scope !== scope) return { missing: id };
    const memo = this.listings.get(id);
    if (memo && memo.json === held.json && memo.deletions === (held.deleted?.places.size ?? 0)) {
      if (memo.last === held.last || this.extend(memo, held)) {
        this.listings.delete(id);
        this.listings.set(id, memo);
        if (this.listingBytes > this.maxBytes) this.remember(id, memo);
        return memo;
      }
    }
    const ids: string[] = [];
    const found = this.conversationItems(scope, id, false, Number.POSITIVE_INFINITY, ids);
    if (found.missing !== undefined) return found;
    const turns = new Set<string>();
    for (let r = held.last; r !== undefined; r = this.responses.get(r)?.prev) {
      if (turns.has(r)) break;
      turns.add(r);
    }
    const listing = new KeptListing(found.items, ids, id, held, turns, found.bytes);
    this.remember(id, listing);
    return listing;
  }

  /**
   * Keeps `listing` for the next page: the newest listings whose conversations come to at most
   * the store's own budget (their items held parsed: 3.3-4.4x their JSON in heap, the items
   * themselves most of it), at most 8.
   */
  private remember(id: string, listing: KeptListing): void {
    this.forget(id);
    if (listing.totalBytes > this.maxBytes) return;
    this.listings.set(id, listing);
    this.hold(listing, 1);
    for (const [oldest] of this.listings) {
      if (this.listingBytes <= this.maxBytes && this.listings.size <= MAX_LISTINGS) break;
      this.forget(oldest);
    }
  }

  private forget(id: string): void {
    const memo = this.listings.get(id);
    if (!memo) return;
    this.listings.delete(id);
    this.hold(memo, -1);
  }

  /**
   * One more (or one less) kept listing holds `listing` and its bases: a listing's bytes are
   * counted while any holds it, once (a base shared by two listings is one copy in memory).
   */
  private hold(listing: KeptListing, by: 1 | -1): void {
    for (let at: KeptListing | undefined = listing; at; at = at.base?.listing) {
      at.holders += by;
      if (at.holders === (by === 1 ? 1 : 0)) this.listingBytes += by * at.bytes;
    }
  }

  /** Whether conversation `id` is held under `scope` (not made the newest). */
  hasConversation(scope: string, id: string): boolean {
    return this.conversations.get(id)?.scope === scope;
  }

  /** Forgets conversation `id` (its responses go as any do); false when it was not held. */
  closeConversation(scope: string, id: string): boolean {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope) return false;
    this.drop(kept);
    return true;
  }

  /**
   * The items of conversation `id` (those it was created with, then each turn's), and its latest
   * response, which the next turn continues; `missing` names what is not held (the conversation,
   * or a response of it). Past `limitBytes`, only its bytes, as `conversation` answers.
   */
  conversationItems(
    scope: string,
    id: string,
    touch = true,
    limitBytes = Number.POSITIVE_INFINITY,
    /**
     * Receives each item's id as sent or derived (listedId), in order; then the items deleted are
     * not left out (the listing marks them: KeptListing).
     */
    listed?: string[],
  ):
    | { items: InputItem[]; bytes: number; last: string | undefined; missing?: undefined }
    | { missing: string } {
    const held = this.conversations.get(id);
    if (!held || held.scope !== scope) return { missing: id };
    const own = held.json.length;
    // The turns' ids follow the conversation's own items' ids, which are listed once its size fits.
    const turnIds: string[] | undefined = listed ? [] : undefined;
    const turns =
      held.last === undefined
        ? undefined
        : this.conversation(scope, held.last, touch, limitBytes - own, turnIds);
    if (turns?.missing !== undefined) return turns;
    const bytes = own + (turns?.bytes ?? 0);
    if (bytes > limitBytes) return { items: [], bytes, last: held.last };
    const kept = touch ? this.touch(held) : held;
    const items = JSON.parse(kept.json) as InputItem[];
    if (listed) for (let j = 0; j < items.length; j++) listed.push(listedId(id, j, items[j]!));
    if (turns) for (let i = 0; i < turns.items.length; i++) items.push(turns.items[i]!);
    if (listed && turnIds) for (let i = 0; i < turnIds.length; i++) listed.push(turnIds[i]!);
    const deleted = held.deleted?.places;
    if (listed || !deleted?.size) return { items, bytes, last: kept.last };
    // By place: a place never moves (turns are only added after it).
    const left: InputItem[] = [];
    for (let i = 0; i < items.length; i++) if (!deleted.has(i)) left.push(items[i]!);
    return { items: left, bytes, last: kept.last };
  }

  /** Conversation `id` goes on from `response` (kept just now) when it is still held. */
  advanceConversation(scope: string, id: string, response: string): void {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope) return;
    kept.last = response;
    const turn = this.responses.get(response);
    if (turn?.scope === scope) turn.conversation = id;
  }

  /** `kept` moved to the newest of its scope (a fresh entry: the write order skips the old one). */
  private touch(kept: Kept): Kept {
    const own = this.scopes.get(kept.scope);
    if (!own) return kept;
    const fresh: Kept = { ...kept, gone: false };
    kept.gone = true;
    own.order.dropped();
    own.order.push(fresh);
    this.mapOf(kept).set(kept.id, fresh);
    return fresh;
  }

  private mapOf(kept: Kept): Map<string, Kept> {
    return kept.kind === 'item' ? this.items : kept.kind === 'response' ? this.responses : this.conversations;
  }

  /** Kept (false: larger than the whole budget). */
  private add(kept: Kept): boolean {
    if (kept.bytes > this.maxBytes) return false;
    const map = this.mapOf(kept);
    const before = map.get(kept.id);
    // A conversation kept again with the same items (revised) keeps its listing.
    if (before) this.drop(before, before.kind === 'conversation' && before.json === kept.json);
    while (this.used + kept.bytes > this.maxBytes) {
      const oldest = this.largestScopeOldest();
      if (oldest === undefined) break;
      this.drop(oldest);
    }
    map.set(kept.id, kept);
    let own = this.scopes.get(kept.scope);
    if (!own) {
      own = { order: new WriteOrder<Kept>(), bytes: 0, at: -1 };
      this.scopes.set(kept.scope, own);
      this.busiest.insert(own);
    }
    own.order.push(kept);
    own.bytes += kept.bytes;
    this.busiest.grew(own);
    this.used += kept.bytes;
    return true;
  }

  /** A listing that read `kept` (a turn, an output item of one, the conversation) is built again. */
  private staled(kept: Kept): void {
    if (kept.kind === 'conversation') this.forget(kept.id);
    // A response's input items read the conversation it was made in (its id among their turns).
    const turn = kept.kind === 'item' ? kept.response : kept.id;
    if (turn === undefined) return;
    for (const [id, memo] of this.listings) if (memo.reads(turn)) this.forget(id);
  }

  /**
   * The oldest entry of the scope holding the most bytes. Scopes are the configured keys (or
   * one), kept in a heap by their bytes: a walk of them per eviction cost the keys holding
   * anything times the evictions (one answer of 20,000 calls into a full store: 45 ms with one
   * key, 359 ms with 4,000).
   */
  private largestScopeOldest(): Kept | undefined {
    return this.busiest.top()?.order.oldest();
  }

  private drop(kept: Kept, revised = false): void {
    const map = this.mapOf(kept);
    if (map.get(kept.id) !== kept) return;
    map.delete(kept.id);
    if (kept.hash !== undefined && this.derived.get(kept.hash) === kept.id) this.derived.delete(kept.hash);
    const tag = kept.kind === 'item' ? this.responses.get(kept.response ?? '')?.tag : kept.tag;
    if (tag) tag.broken = true;
    if (this.listings.size > 0 && !revised) this.staled(kept);
    kept.gone = true;
    this.used -= kept.bytes;
    const own = this.scopes.get(kept.scope);
    if (!own) return;
    own.order.dropped();
    own.bytes -= kept.bytes;
    if (own.order.live === 0) {
      this.scopes.delete(kept.scope);
      this.busiest.remove(own);
    } else this.busiest.shrank(own);
  }
}

interface Scope {
  order: WriteOrder<Kept>;
  bytes: number;
  /** Its place in BusiestFirst's heap (-1: none). */
  at: number;
}
