/**
 * Owners (a Responses store's keys, the refusal memory's) in a binary max-heap by what they hold:
 * the busiest found, and each change kept, in O(log owners). Each eviction of a full store or
 * memory takes the busiest owner's oldest entry; a walk of every owner for it cost the owners
 * holding anything times the evictions (one answer of 20,000 calls into a full Responses store:
 * 45 ms with one key, 359 ms with 4,000; one refusal naming 20,000 images into a full refusal
 * memory: 65 ms with one key, 822 ms with 4,000).
 */

/** An owner as the heap holds it: its place there (-1: none), kept by the heap. */
export interface HeapPlace {
  at: number;
}

export class BusiestFirst<S extends HeapPlace> {
  private readonly heap: S[] = [];

  /** `weight`: what an owner holds now (bytes, entries). */
  constructor(private readonly weight: (s: S) => number) {}

  top(): S | undefined {
    return this.heap[0];
  }

  insert(s: S): void {
    s.at = this.heap.length;
    this.heap.push(s);
    this.up(s.at);
  }

  remove(s: S): void {
    const i = s.at;
    if (i < 0) return;
    const last = this.heap.pop()!;
    s.at = -1;
    if (last === s) return;
    this.heap[i] = last;
    last.at = i;
    this.down(this.up(i));
  }

  /** `s`'s weight went up. */
  grew(s: S): void {
    if (s.at >= 0) this.up(s.at);
  }

  /** `s`'s weight went down. */
  shrank(s: S): void {
    if (s.at >= 0) this.down(s.at);
  }

  private put(s: S, i: number): void {
    this.heap[i] = s;
    s.at = i;
  }

  /** Moves the owner at `i` up past every parent holding less; its new place. */
  private up(i: number): number {
    const s = this.heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = this.heap[parent]!;
      if (this.weight(p) >= this.weight(s)) break;
      this.put(p, i);
      i = parent;
    }
    this.put(s, i);
    return i;
  }

  private down(i: number): void {
    const s = this.heap[i]!;
    const n = this.heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.weight(this.heap[r]!) > this.weight(this.heap[l]!) ? r : l;
      const child = this.heap[c]!;
      if (this.weight(child) <= this.weight(s)) break;
      this.put(child, i);
      i = c;
    }
    this.put(s, i);
  }
}
