/**
 * A map for the per-choice and per-call state of stream hooks, keyed by an index the upstream
 * sends: almost always one key (choice 0, call 0), sometimes a few. The first key lives in two
 * fields; a Map is created only for a second one. An empty Map with its hash table costs about
 * 180 bytes, and each open tool stream used to hold about ten of them.
 *
 * The Map semantics the hooks rely on hold: keys compare as SameValueZero, iteration follows
 * insertion order (the inline key is always the first inserted; nothing is ever deleted).
 */
export class IndexMap<V> {
  private hasFirst = false;
  private firstKey: number = 0;
  private firstValue: V | undefined;
  private rest: Map<number, V> | undefined;

  private isFirst(key: number): boolean {
    const k = this.firstKey;
    // SameValueZero, as Map compares keys (NaN equals NaN; no JSON index is NaN, but still).
    return this.hasFirst && (key === k || (Number.isNaN(key) && Number.isNaN(k)));
  }

  get(key: number): V | undefined {
    return this.isFirst(key) ? this.firstValue : this.rest?.get(key);
  }

  set(key: number, value: V): this {
    if (!this.hasFirst) {
      this.hasFirst = true;
      // Map stores a -0 key as +0.
      this.firstKey = key === 0 ? 0 : key;
      this.firstValue = value;
    } else if (this.isFirst(key)) this.firstValue = value;
    else (this.rest ??= new Map()).set(key, value);
    return this;
  }

  get size(): number {
    return (this.hasFirst ? 1 : 0) + (this.rest?.size ?? 0);
  }

  *entries(): IterableIterator<[number, V]> {
    if (this.hasFirst) yield [this.firstKey, this.firstValue as V];
    if (this.rest) yield* this.rest.entries();
  }

  *values(): IterableIterator<V> {
    if (this.hasFirst) yield this.firstValue as V;
    if (this.rest) yield* this.rest.values();
  }

  [Symbol.iterator](): IterableIterator<[number, V]> {
    return this.entries();
  }
}
