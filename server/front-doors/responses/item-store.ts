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
 * in use outlives idle ones. Per process: a reference or a previous_response_id another worker or
 * replica served, one evicted, or one from before a restart misses.
 */
import { createHash, randomBytes } from 'node:crypto';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import type { ItemLookup } from '../../../protocol/responses/items.js';
import type { InputItem, OutputItem } from '../../../protocol/responses/types.js';
import { BusiestFirst } from '../../busiest-first.js';
import { WriteOrder } from '../../write-order.js';
import { KeptListing, KeptListings, type Listed, type Listing } from './kept-listing.js';

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
  /** A conversation: the ids of its items deleted since (DELETE .../items/{item_id}). */
  readonly deleted?: readonly string[];
}

/** A conversation's own fields (GET /v1/conversations/{id}). */
export interface ConversationMeta {
  created_at: number;
  metadata: Record<string, unknown>;
}

/**
 * The id a conversation item is listed under: its own, or (an input item sent without one) one
 * derived from the entry that holds it and its place there, so that it is the same on every
 * listing (a cursor, a delete) without rewriting what was kept: the entry's hash, then the place
 * (one hash per entry: one per item was half of listing a large conversation, 160,000 items
 * ~0.5 s).
 */
function listedId(entry: string, index: number, item: InputItem): string {
  const own = itemId(item);
  if (own !== undefined) return own;
  const prefix = (item as { type?: unknown }).type === 'message' || !('type' in item) ? 'msg' : 'item';
  if (entry !== hashed.entry) {
    hashed.entry = entry;
    hashed.hex = createHash('sha256').update(entry).digest('hex').slice(0, 40);
  }
  return `${prefix}_${hashed.hex}${index.toString(16).padStart(8, '0')}`;
}

/** The last entry listedId hashed (the items of one entry are listed in a row). */
const hashed = { entry: '', hex: '' };

/** A conversation to continue, or the response id the walk could not find. */
export type Conversation =
  | { items: InputItem[]; bytes: number; turns: number; missing?: undefined }
  | { missing: string };

function itemId(item: unknown): string | undefined {
  const id = (item as { id?: unknown }).id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

export class ResponsesItemStore {
  private readonly items = new Map<string, Kept>();
  private readonly responses = new Map<string, Kept>();
  private readonly conversations = new Map<string, Kept>();
  /** Each scope's entries, oldest first (server/write-order.ts: a Map's would walk its dropped slots), and bytes. */
  private readonly scopes = new Map<string, Scope>();
  /** The scopes by their bytes, the busiest first. */
  private readonly busiest = new BusiestFirst<Scope>((s) => s.bytes);
  private used = 0;
  /** Listings kept between pages (kept-listing.ts): conversations' by `c:` id, responses' input items by `r:` id. */
  private readonly listings: KeptListings;

  constructor(readonly maxBytes: number) {
    this.listings = new KeptListings(maxBytes);
  }

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
    const bytes =
      Buffer.byteLength(json) +
      (envelope ? Buffer.byteLength(envelope) : 0) +
      (numbering?.byteLength ?? 0) +
      idBytes +
      ENTRY_OVERHEAD_BYTES;
    const count = (link?.count ?? 0) + brought.length + outputIds.length;
    // A continued response no longer held keeps no link: naming this one misses as that one did.
    const linked = prev === undefined ? link?.id : prev;
    return this.add({
      id,
      kind: 'response',
      scope,
      gone: false,
      json,
      bytes,
      outputIds,
      count,
      ...(linked !== undefined ? { prev: linked } : {}),
      ...(envelope !== undefined ? { envelope } : {}),
      ...(envelope !== undefined && numbering !== undefined ? { numbering } : {}),
    });
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
   * conversation still held, the items it was created with come first (deleted ones left out):
   * before, they were missing. Kept between pages (kept-listing.ts): a page read the whole chain
   * again. Undefined when the response is not held under `scope`; not made the newest (a listing
   * is not a turn).
   */
  inputItems(scope: string, id: string): Listing | undefined {
    const kept = this.responses.get(id);
    if (!kept || kept.scope !== scope || kept.envelope === undefined) return undefined;
    const key = `r:${id}`;
    const memo = this.listings.get(key);
    if (memo) return memo;
    let ids: string[] = [];
    const found = this.conversation(scope, id, false, Number.POSITIVE_INFINITY, ids);
    const reads = new Set<string>();
    let items: InputItem[];
    let bytes = kept.json.length;
    if (found.missing !== undefined) {
      items = JSON.parse(kept.json) as InputItem[];
      ids.length = 0;
      for (let j = 0; j < items.length; j++) ids.push(listedId(id, j, items[j]!));
      reads.add(id);
    } else {
      items = found.items;
      bytes = found.bytes;
      const n = items.length - (kept.outputIds?.length ?? 0);
      items.length = n;
      ids.length = n;
      for (let r: string | undefined = id; r !== undefined && !reads.has(r); r = this.responses.get(r)?.prev)
        reads.add(r);
      // Made in a conversation: the items it was created with come first (as listed now).
      const held = kept.conversation === undefined ? undefined : this.conversations.get(kept.conversation);
      if (held && held.scope === scope) {
        const own = JSON.parse(held.json) as InputItem[];
        const deleted = held.deleted?.length ? new Set(held.deleted) : undefined;
        const ownIds: string[] = [];
        const ownItems: InputItem[] = [];
        for (let j = 0; j < own.length; j++) {
          const listed = listedId(held.id, j, own[j]!);
          if (deleted?.has(listed)) continue;
          ownIds.push(listed);
          ownItems.push(own[j]!);
        }
        items = ownItems.concat(items);
        ids = ownIds.concat(ids);
        bytes += held.json.length;
        reads.add(held.id);
      }
    }
    const listing = new KeptListing(items, ids, kept, reads, bytes);
    this.listings.remember(key, listing);
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
   * `limitBytes`, only its bytes (no items, nothing made the newest): the caller refuses it.
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
      at = response.prev;
    }
    // Counted before any of it is parsed: the caller refuses it by its bytes.
    if (bytes > limitBytes) return { items: [], bytes, turns: chain.length };
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
  private extend(key: string, memo: KeptListing, held: Kept): boolean {
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
    const deleted = held.deleted?.length ? new Set(held.deleted) : undefined;
    for (let i = 0; i < items.length; i++) if (!deleted?.has(ids[i]!)) memo.append(ids[i]!, items[i]!);
    for (const r of added) memo.reads.add(r.id);
    memo.last = held.last;
    this.listings.grew(key, bytes);
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
   * counted anew. False when not held under `scope`, or past the whole budget.
   */
  private reviseConversation(
    scope: string,
    id: string,
    change: { metadata?: Record<string, unknown>; deleted?: string },
  ): boolean {
    const kept = this.conversations.get(id);
    if (!kept || kept.scope !== scope) return false;
    const meta = JSON.parse(kept.envelope ?? '{}') as ConversationMeta;
    if (change.metadata) meta.metadata = change.metadata;
    const envelope = stringifyJson(meta);
    const deleted = change.deleted === undefined ? kept.deleted : [...(kept.deleted ?? []), change.deleted];
    let bytes =
      Buffer.byteLength(kept.json) + Buffer.byteLength(envelope) + id.length * 2 + ENTRY_OVERHEAD_BYTES;
    for (const d of deleted ?? []) bytes += d.length + 16;
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
    return this.add(fresh);
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
    const listed = this.listConversation(scope, id);
    if (listed.missing !== undefined || listed.indexOf(itemId) < 0) return false;
    return this.reviseConversation(scope, id, { deleted: itemId });
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
    return { items: items.map((item, j) => ({ id: listedId(turn, j, item), item })) };
  }

  /**
   * Conversation `id`'s items as listed (GET .../items): each with its listed id, deleted ones
   * left out, oldest first, and where an id is among them; not made the newest (a listing is not
   * a turn). Kept between pages (`listings`): a page of a conversation read to its end parsed the
   * whole conversation again and scanned it for the cursor (160,000 items: ~1 s of loop a page,
   * pages x conversation to read it all). Turns added since (POST .../items, a turn answered)
   * extend it, read once each: a page after each added item cost the whole conversation again.
   * Built again once anything else changes: an item deleted, one of its entries dropped.
   */
  listConversation(scope: string, id: string): Listing | { missing: string } {
    const held = this.conversations.get(id);
    if (!held || held.scope !== scope) return { missing: id };
    const key = `c:${id}`;
    const memo = this.listings.get(key);
    if (memo?.builtFrom(held) && (memo.last === held.last || this.extend(key, memo, held))) return memo;
    const ids: string[] = [];
    const found = this.conversationItems(scope, id, false, Number.POSITIVE_INFINITY, ids);
    if (found.missing !== undefined) return found;
    const reads = new Set<string>([id]);
    for (let r = held.last; r !== undefined; r = this.responses.get(r)?.prev) {
      if (reads.has(r)) break;
      reads.add(r);
    }
    const listing = new KeptListing(found.items, ids, held, reads, found.bytes);
    this.listings.remember(key, listing);
    return listing;
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
    /** Receives each item's listed id, in order. */
    listed?: string[],
  ):
    | { items: InputItem[]; bytes: number; last: string | undefined; missing?: undefined }
    | { missing: string } {
    const held = this.conversations.get(id);
    if (!held || held.scope !== scope) return { missing: id };
    const own = held.json.length;
    const deleted = held.deleted?.length ? new Set(held.deleted) : undefined;
    const ids = listed ?? (deleted ? [] : undefined);
    // The turns' ids follow the conversation's own items' ids, which are listed once its size fits.
    const turnIds: string[] | undefined = ids ? [] : undefined;
    const turns =
      held.last === undefined
        ? undefined
        : this.conversation(scope, held.last, touch, limitBytes - own, turnIds);
    if (turns?.missing !== undefined) return turns;
    const bytes = own + (turns?.bytes ?? 0);
    if (bytes > limitBytes) return { items: [], bytes, last: held.last };
    const kept = touch ? this.touch(held) : held;
    const items = JSON.parse(kept.json) as InputItem[];
    if (ids) for (let j = 0; j < items.length; j++) ids.push(listedId(id, j, items[j]!));
    if (turns) for (let i = 0; i < turns.items.length; i++) items.push(turns.items[i]!);
    if (ids && turnIds) for (let i = 0; i < turnIds.length; i++) ids.push(turnIds[i]!);
    if (!deleted || !ids) return { items, bytes, last: kept.last };
    const left: InputItem[] = [];
    const leftIds: string[] = [];
    for (let i = 0; i < items.length; i++) {
      if (deleted.has(ids[i]!)) continue;
      left.push(items[i]!);
      leftIds.push(ids[i]!);
    }
    if (listed) {
      listed.length = 0;
      for (const l of leftIds) listed.push(l);
    }
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
    if (before) this.drop(before);
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

  /** A listing that read `kept` (a turn, an output item of one, a conversation) is built again. */
  private staled(kept: Kept): void {
    const read = kept.kind === 'item' ? kept.response : kept.id;
    if (read !== undefined) this.listings.stale(read);
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

  private drop(kept: Kept): void {
    const map = this.mapOf(kept);
    if (map.get(kept.id) !== kept) return;
    map.delete(kept.id);
    if (this.listings.size > 0) this.staled(kept);
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
