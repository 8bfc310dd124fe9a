/**
 * `uniqueItems` in linear time. ajv compares object items pairwise (15k objects: 4.7 s on the
 * shared event loop); here every item gets a canonical JSON key (object keys sorted, so key
 * order does not matter, as in ajv's deep equality) and a Set finds the first duplicate.
 * Depth is the caller's to bound: validate-arguments refuses deeper arguments before this runs.
 */
import { StringMap } from '../../../protocol/string-set.js';

function write(value: unknown, out: string[]): void {
  if (value === null || typeof value !== 'object') {
    // Numbers as JSON writes them: 1 and 1.0 (and 0 and -0) are the same item, as in ajv.
    out.push(typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? 'undefined'));
    return;
  }
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(',');
      write(value[i], out);
    }
    out.push(']');
    return;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length > 1) keys.sort();
  out.push('{');
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    out.push(i > 0 ? ',' : '', JSON.stringify(k), ':');
    write(obj[k], out);
  }
  out.push('}');
}

/** One string per value such that two values are deep-equal exactly when their keys are equal. */
export function canonicalKey(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  return out.join('');
}

/** Indexes [earlier, later] of the first repeated item, or undefined when all are distinct. */
export function firstDuplicate(items: readonly unknown[]): [number, number] | undefined {
  // A StringMap: V8 hashes a key past 16,383 characters by its length alone, and the model's
  // 1,000 strings of 20 KB alike but for their ends were each compared with all the others
  // (1.75 s of CPU, 250 of them 73 ms).
  const seen = new StringMap<number>();
  for (let i = 0; i < items.length; i++) {
    const key = canonicalKey(items[i]);
    const earlier = seen.get(key);
    if (earlier !== undefined) return [earlier, i];
    seen.set(key, i);
  }
  return undefined;
}
