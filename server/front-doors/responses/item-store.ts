/**
 * The Responses output items this process returned, by id, so that an `item_reference` to one
 * resolves: `@ai-sdk/openai` (store: true, its default) sends earlier assistant text, reasoning
 * and custom tool calls back as references. Only output items are kept (what the client already
 * received), never anything of the prompt; each under the API key that got it.
 *
 * Bounded: each item is held as its JSON text and counted at its UTF-8 length plus a fixed
 * overhead; past the budget the oldest item of the key holding the most bytes goes first, so one
 * busy key evicts its own items before a quiet key's (with one key, or none, the oldest go
 * first). Per process: a reference to an item another
 * worker or replica served, or one evicted, misses (a 400 that says so).
 */
import type { InputItem, OutputItem } from '../../../protocol/responses/types.js';
import { WriteOrder } from '../../write-order.js';

/** Map entry, id and bookkeeping, beyond the JSON text itself. */
const ENTRY_OVERHEAD_BYTES = 128;

interface Kept {
  readonly id: string;
  /** The API key it was returned to ('' when no keys are configured). */
  scope: string;
  /** Dropped (evicted or kept again): skipped where its scope's write order still holds it. */
  gone: boolean;
  json: string;
  bytes: number;
}

export class ResponsesItemStore {
  private readonly items = new Map<string, Kept>();
  /** Each scope's items, oldest first (server/write-order.ts: a Map's would walk its dropped slots), and bytes. */
  private readonly scopes = new Map<string, { order: WriteOrder<Kept>; bytes: number }>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes counted for what is held now. */
  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.items.size;
  }

  /** Keeps a response's output items under `scope`, evicting the oldest past the budget. */
  keep(scope: string, output: readonly OutputItem[]): void {
    for (const item of output) {
      const id = (item as { id?: unknown }).id;
      if (typeof id !== 'string' || id === '') continue;
      const json = JSON.stringify(item);
      const bytes = Buffer.byteLength(json) + id.length + ENTRY_OVERHEAD_BYTES;
      if (bytes > this.maxBytes) continue;
      this.drop(id);
      while (this.used + bytes > this.maxBytes) {
        const oldest = this.largestScopeOldest();
        if (oldest === undefined) break;
        this.drop(oldest);
      }
      const kept: Kept = { id, scope, gone: false, json, bytes };
      this.items.set(id, kept);
      let own = this.scopes.get(scope);
      if (!own) {
        own = { order: new WriteOrder<Kept>(), bytes: 0 };
        this.scopes.set(scope, own);
      }
      own.order.push(kept);
      own.bytes += bytes;
      this.used += bytes;
    }
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
   * The oldest item of the scope holding the most bytes. Scopes are the configured keys (or one),
   * so the walk is bounded by the key file, not by traffic.
   */
  private largestScopeOldest(): string | undefined {
    let largest: { order: WriteOrder<Kept>; bytes: number } | undefined;
    for (const scope of this.scopes.values()) {
      if (!largest || scope.bytes > largest.bytes) largest = scope;
    }
    return largest?.order.oldest()?.id;
  }

  private drop(id: string): void {
    const kept = this.items.get(id);
    if (!kept) return;
    this.items.delete(id);
    kept.gone = true;
    this.used -= kept.bytes;
    const own = this.scopes.get(kept.scope);
    if (!own) return;
    own.order.dropped();
    own.bytes -= kept.bytes;
    if (own.order.live === 0) this.scopes.delete(kept.scope);
  }
}
