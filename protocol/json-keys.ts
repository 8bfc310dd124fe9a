/**
 * Object keys in a request body, counted from its bytes before it is parsed. JSON.parse pays for
 * every distinct key it meets (V8 interns each one): 1M distinct keys (14 MB) parse in 7.5 s, 400k
 * objects of one distinct key each in 3 s, all of it on the event loop (issue 27, docs/bounds.md).
 * A real request repeats the same few hundred keys (`role`, `content`, a schema's property names),
 * so a body with more distinct keys than any client sends is refused before it is parsed, as is
 * one with more top-level fields than any API has (every request policy copies the top level).
 *
 * One pass over the bytes: strings are skipped with `indexOf` (a megabyte of base64 is one
 * call), and a key's bytes are hashed (FNV-1a, 32 bits) into a set of numbers. A collision
 * undercounts, so the count errs towards accepting. A body that is not valid JSON is counted
 * anyway (the parse that follows gives it its own error).
 */
import { ToolproofError } from './errors.js';
import { stringEnd } from './json-string-end.js';

/** Top-level fields a request body may have: the APIs' own and a backend's extras fit many times. */
export const MAX_TOP_LEVEL_FIELDS = 1024;
/**
 * Distinct object keys a request body may name: the scan and the parse of that many cost about
 * 0.3 s on a loaded small box; a long agent session names a few thousand.
 */
export const MAX_DISTINCT_KEYS = 50_000;

const QUOTE = 0x22;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/** Nesting tracked; past it the scan gives up (the depth check after the parse refuses the body). */
const MAX_TRACKED_DEPTH = 4096;

export type KeyExcess = { kind: 'top-level'; limit: number } | { kind: 'distinct'; limit: number };

/** The 400 for a body past a bound (the front door writes it in its own error shape). */
export function keyExcessError(excess: KeyExcess): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', {
    param: 'body',
    message:
      excess.kind === 'top-level'
        ? `The request body has more than ${excess.limit} top-level fields; a request has a few dozen.`
        : `The request body names more than ${excess.limit} distinct object keys; a request names a few thousand at most.`,
  });
}

/** Which bound `body` passes, if any; null when within both. */
export function excessKeys(
  body: Buffer,
  limits: { topLevel: number; distinct: number } = {
    topLevel: MAX_TOP_LEVEL_FIELDS,
    distinct: MAX_DISTINCT_KEYS,
  },
): KeyExcess | null {
  // containers[d]: 1 for an object, 0 for an array, at depth d (1 = the body itself)
  const containers = new Uint8Array(MAX_TRACKED_DEPTH + 1);
  let depth = 0;
  let expectKey = false;
  let topLevel = 0;
  const seen = new Set<number>();
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const b = body[i]!;
    if (b === QUOTE) {
      const end = stringEnd(body, i);
      if (end === n) return null;
      if (expectKey) {
        expectKey = false;
        if (depth === 1 && ++topLevel > limits.topLevel) return { kind: 'top-level', limit: limits.topLevel };
        let h = 0x811c9dc5;
        for (let k = i + 1; k < end; k++) h = Math.imul(h ^ body[k]!, 0x01000193);
        if (!seen.has(h)) {
          seen.add(h);
          if (seen.size > limits.distinct) return { kind: 'distinct', limit: limits.distinct };
        }
      }
      i = end;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > MAX_TRACKED_DEPTH) return null;
      containers[depth] = b === OPEN_OBJECT ? 1 : 0;
      expectKey = b === OPEN_OBJECT;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (depth > 0) depth--;
      expectKey = false;
    } else if (b === COMMA) {
      expectKey = containers[depth] === 1;
    }
  }
  return null;
}
