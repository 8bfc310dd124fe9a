/**
 * A Set (and a Map, StringMap) of strings safe for long ones. V8 hashes a string past 16,383 characters by its length
 * alone, so a Set or Map of many distinct long strings of one length (data URLs a client made
 * alike) compares each with all the others: 1,000 images of 20 KB cost 0.86 s to put in one
 * Set. Here a long string is keyed by its SHA-256 (linear in its bytes, once an operation); the
 * set holds and yields the strings themselves.
 */
import { createHash } from 'node:crypto';

/** Past this many characters a string is keyed by its digest (below V8's whole-hash limit). */
const LONG = 4096;

function keyOf(v: string): string {
  // Prefixed either way: no short string can be taken for a long one's digest.
  return v.length > LONG ? `h${createHash('sha256').update(v).digest('base64')}` : `s${v}`;
}

export class StringSet implements ReadonlySet<string> {
  private readonly map = new Map<string, string>();

  constructor(values?: Iterable<string>) {
    if (values) for (const v of values) this.add(v);
  }

  add(v: string): this {
    this.map.set(keyOf(v), v);
    return this;
  }

  has(v: string): boolean {
    return this.map.has(keyOf(v));
  }

  get size(): number {
    return this.map.size;
  }

  values(): SetIterator<string> {
    return this.map.values();
  }

  keys(): SetIterator<string> {
    return this.map.values();
  }

  *entries(): SetIterator<[string, string]> {
    for (const v of this.map.values()) yield [v, v];
  }

  forEach(f: (value: string, key: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    for (const v of this.map.values()) f.call(thisArg, v, v, this);
  }

  [Symbol.iterator](): SetIterator<string> {
    return this.map.values();
  }
}

/**
 * A Map keyed by strings, safe for long ones (as StringSet): call ids a history repeats, tool
 * names, anything a client may send many of, alike but for their last characters.
 */
export class StringMap<V> {
  private readonly map = new Map<string, [string, V]>();

  get(k: string): V | undefined {
    return this.map.get(keyOf(k))?.[1];
  }

  set(k: string, v: V): this {
    this.map.set(keyOf(k), [k, v]);
    return this;
  }

  has(k: string): boolean {
    return this.map.has(keyOf(k));
  }

  get size(): number {
    return this.map.size;
  }

  *values(): IterableIterator<V> {
    for (const e of this.map.values()) yield e[1];
  }

  *entries(): IterableIterator<[string, V]> {
    for (const e of this.map.values()) yield [e[0], e[1]];
  }
}
