/**
 * The Responses output items this process returned, by id, so that an `item_reference` to one
 * resolves: `@ai-sdk/openai` (store: true, its default) sends earlier assistant text, reasoning
 * and custom tool calls back as references. Only output items are kept (what the client already
 * received), never anything of the prompt; each under the API key that got it.
 *
 * Bounded: each item is held as its JSON text and counted at its UTF-8 length plus a fixed
 * overhead; past the budget the oldest go first. Per process: a reference to an item another
 * worker or replica served, or one evicted, misses (a 400 that says so).
 */
import type { InputItem, OutputItem } from '../../../protocol/responses/types.js';

/** Map entry, id and bookkeeping, beyond the JSON text itself. */
const ENTRY_OVERHEAD_BYTES = 128;

interface Kept {
  /** The API key it was returned to ('' when no keys are configured). */
  scope: string;
  json: string;
  bytes: number;
}

export class ResponsesItemStore {
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly items = new Map<string, Kept>();
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
        const oldest = this.items.keys().next();
        if (oldest.done) break;
        this.drop(oldest.value);
      }
      this.items.set(id, { scope, json, bytes });
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

  private drop(id: string): void {
    const kept = this.items.get(id);
    if (!kept) return;
    this.items.delete(id);
    this.used -= kept.bytes;
  }
}
