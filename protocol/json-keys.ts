/**
 * Object keys in a request body, counted from its bytes before it is parsed. JSON.parse pays for
 * every distinct key it meets (V8 interns each one): 1M distinct keys (14 MB) parse in 7.5 s, 400k
 * objects of one distinct key each in 3 s, all of it on the event loop (issue 27, docs/bounds.md).
 * A real request repeats the same few hundred keys (`role`, `content`, a schema's property names),
 * so a body with more distinct keys than any client sends is refused before it is parsed, as is
 * one with more top-level fields than any API has (every request policy copies the top level).
 *
 * Nesting is bounded the same way: JSON.parse of 8M nested arrays (a 16 MB body) held the loop
 * 11-15 s before the depth check after it could refuse the body, on every front door; and an
 * upstream's event or body is untrusted too (the same 14 MB held it 11-13 s). A body nested
 * past `depth` levels is refused from the bytes.
 *
 * One pass over the bytes: strings are skipped with `indexOf` (a megabyte of base64 is one
 * call), and a key's bytes are hashed (FNV-1a, 32 bits) into a set of numbers. A collision
 * undercounts, so the count errs towards accepting. A body that is not valid JSON is counted
 * anyway (the parse that follows gives it its own error).
 */
import { ToolproofError } from './errors.js';
import { tooDeepError } from './json-depth.js';
import { stringEnd } from './json-string-end.js';

/** Top-level fields a request body may have: the APIs' own and a backend's extras fit many times. */
export const MAX_TOP_LEVEL_FIELDS = 1024;
/**
 * Distinct object keys a request body may name: the scan and the parse of that many cost about
 * 0.3 s on a loaded small box; a long agent session names a few thousand.
 */
export const MAX_DISTINCT_KEYS = 50_000;
/**
 * Keys past this many bytes are long: V8 hashes a string past 16,383 characters by its length
 * alone, and JSON.parse interns every key, so n long keys of one length (alike but for their
 * ends) are each compared with all the others: 1,000 keys of 20 KB parse in 0.4-0.9 s, 250 in
 * 30-80 ms. A key's bytes are at least its characters, so no long key is counted short.
 */
export const LONG_KEY_BYTES = 16_383;
/** Long keys a body may name (any API's keys are names of a few dozen characters). */
export const MAX_LONG_KEYS = 16;

const QUOTE = 0x22;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;

/**
 * Nesting a request body may reach in its bytes. The depth check after the parse refuses past
 * MAX_REQUEST_DEPTH (128) with the same 400; parsing 4,096 levels costs under a millisecond, so
 * only a body nested deeper than any parse should pay for is refused here.
 */
export const MAX_SCANNED_DEPTH = 4096;

/**
 * Characters under which a JSON text is parsed without this scan: nothing that short costs
 * JSON.parse more than a few milliseconds (8k nested levels, 16 KB, ~10 ms on a loaded small
 * box), so the many small events of a stream do not pay for a second pass.
 */
export const SCAN_FROM_CHARS = 16 * 1024;

export type KeyExcess =
  | { kind: 'top-level'; limit: number }
  | { kind: 'distinct'; limit: number }
  /** More than `limit` keys past LONG_KEY_BYTES. */
  | { kind: 'long'; limit: number }
  /** A top-level field named twice (KeyLimits.unique). */
  | { kind: 'duplicate'; field: string }
  | {
      kind: 'deep';
      limit: number;
      /** Where, as tooDeepPath names it (`tools.0.function.parameters`: the first PATH_SEGMENTS). */
      path: string;
    };

/** Segments of a too-deep value's path kept (tooDeepPath's `keep`). */
const PATH_SEGMENTS = 4;

export interface KeyLimits {
  topLevel: number;
  distinct: number;
  /** Containers nested deeper than this are an excess (default MAX_SCANNED_DEPTH). */
  depth?: number;
  /**
   * Distinct keys made of digits only, counted apart from `distinct` when given (otherwise with
   * it). An upstream's `prompt_logprobs` are keyed by token id: as many distinct keys as the
   * vocabulary (262,144 for Gemma), where names of fields are a few dozen.
   */
  indexKeys?: number;
  /**
   * A top-level field named twice is an excess. JSON leaves duplicates to the parser: JSON.parse,
   * Python's and llama-server's take the last, Go's gjson (llama-swap, which routes by `model`)
   * the first. toolproof judges the body it parsed (a key's model allow-list, the route) and
   * forwards the client's own bytes where it rewrote nothing: `{"model":"other","model":"mine"}`
   * was judged as "mine" and served as "other". The client bodies' default.
   */
  unique?: boolean;
  /** Keys past LONG_KEY_BYTES a body may name (default MAX_LONG_KEYS). */
  longKeys?: number;
}

/** The 400 for a body past a bound (the front door writes it in its own error shape). */
export function keyExcessError(excess: KeyExcess): ToolproofError {
  // Nested past any request's bound: the same 400 as the check after the parse, naming the field.
  if (excess.kind === 'deep') return tooDeepError(excess.path);
  if (excess.kind === 'duplicate')
    return new ToolproofError('TP_ERR_INVALID_FIELD', {
      param: excess.field,
      message: `The request body names the field "${excess.field}" more than once: JSON parsers differ on which one counts.`,
    });
  if (excess.kind === 'long')
    return new ToolproofError('TP_ERR_INVALID_FIELD', {
      param: 'body',
      message: `The request body names more than ${excess.limit} object keys longer than ${LONG_KEY_BYTES} bytes; a request's keys are names of a few dozen characters.`,
    });
  return new ToolproofError('TP_ERR_INVALID_FIELD', {
    param: 'body',
    message:
      excess.kind === 'top-level'
        ? `The request body has more than ${excess.limit} top-level fields; a request has a few dozen.`
        : `The request body names more than ${excess.limit} distinct object keys; a request names a few thousand at most.`,
  });
}

/** What an upstream's JSON past a bound is, in words (the 502's message: "sent <this>"). */
export function describeExcess(excess: KeyExcess): string {
  if (excess.kind === 'deep') return `a value nested deeper than ${excess.limit} levels`;
  if (excess.kind === 'top-level') return `an object of more than ${excess.limit} fields`;
  if (excess.kind === 'duplicate') return `an object naming "${excess.field}" twice`;
  if (excess.kind === 'long')
    return `more than ${excess.limit} object keys longer than ${LONG_KEY_BYTES} bytes`;
  return `more than ${excess.limit} distinct object keys`;
}

/** Which bound `body` passes, if any; null when within both. */
export function excessKeys(
  body: Buffer,
  limits: KeyLimits = {
    topLevel: MAX_TOP_LEVEL_FIELDS,
    distinct: MAX_DISTINCT_KEYS,
    unique: true,
  },
): KeyExcess | null {
  const maxDepth = limits.depth ?? MAX_SCANNED_DEPTH;
  // containers[d]: 1 for an object, 0 for an array, at depth d (1 = the body itself)
  const containers = new Uint8Array(maxDepth + 1);
  let depth = 0;
  let expectKey = false;
  let topLevel = 0;
  // The top-level fields' names (at most limits.topLevel of them), when they must be unique.
  const fields = limits.unique === true ? new TopFields(body) : undefined;
  const seen = new Set<number>();
  const indices = limits.indexKeys === undefined ? seen : new Set<number>();
  const indexLimit = limits.indexKeys ?? limits.distinct;
  const longLimit = limits.longKeys ?? MAX_LONG_KEYS;
  let longKeys = 0;
  // The path to where the scan is, for its first PATH_SEGMENTS levels: per level, the current
  // key's bytes (start and end) in an object, the current index in an array. Read only when the
  // body is too deep.
  const segment = new Int32Array(2 * (PATH_SEGMENTS + 1));
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const b = body[i]!;
    if (b === QUOTE) {
      const end = stringEnd(body, i);
      if (end === n) return null;
      if (expectKey) {
        expectKey = false;
        if (depth <= PATH_SEGMENTS) {
          segment[2 * depth] = i + 1;
          segment[2 * depth + 1] = end;
        }
        if (end - i - 1 > LONG_KEY_BYTES && ++longKeys > longLimit) return { kind: 'long', limit: longLimit };
        let h = 0x811c9dc5;
        let digits = end > i + 1;
        for (let k = i + 1; k < end; k++) {
          const c = body[k]!;
          h = Math.imul(h ^ c, 0x01000193);
          if (c < 0x30 || c > 0x39) digits = false;
        }
        if (depth === 1) {
          if (++topLevel > limits.topLevel) return { kind: 'top-level', limit: limits.topLevel };
          const twice = fields?.add(i + 1, end, h);
          if (twice !== undefined) return { kind: 'duplicate', field: twice.slice(0, 256) };
        }
        const set = digits ? indices : seen;
        if (!set.has(h)) {
          set.add(h);
          if (set === seen ? seen.size > limits.distinct : set.size > indexLimit)
            return { kind: 'distinct', limit: set === seen ? limits.distinct : indexLimit };
        }
      }
      i = end;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > maxDepth)
        return { kind: 'deep', limit: maxDepth, path: pathOf(body, containers, segment) };
      containers[depth] = b === OPEN_OBJECT ? 1 : 0;
      expectKey = b === OPEN_OBJECT;
      if (depth <= PATH_SEGMENTS) segment[2 * depth] = segment[2 * depth + 1] = 0;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (depth > 0) depth--;
      expectKey = false;
    } else if (b === COMMA) {
      expectKey = containers[depth] === 1;
      // an array's index: its count of commas
      if (!expectKey && depth <= PATH_SEGMENTS) segment[2 * depth] = segment[2 * depth]! + 1;
    }
  }
  return null;
}

/** FNV-1a (32 bits) of `bytes` from `start` to `end`, as the scan hashes a key. */
function fnv(bytes: Buffer, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let k = start; k < end; k++) h = Math.imul(h ^ bytes[k]!, 0x01000193);
  return h;
}

/**
 * The top-level fields' names met so far, to find one named twice: each by the hash of its
 * bytes as JSON reads them (a key without escapes is those bytes, kept as offsets into the body;
 * one with escapes is read, `"mod\u0065l"` being `"model"`), compared byte for byte on a hash
 * match. No string per key: the scan runs on every request body.
 */
class TopFields {
  /** Per hash, the first field with it; `next` chains the others. */
  private readonly first = new Map<number, number>();
  private readonly next: number[] = [];
  private readonly buffers: Buffer[] = [];
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  constructor(private readonly body: Buffer) {}

  /** Adds the key at `start`..`end` (`hash`: its bytes' hash); its name if met before. */
  add(start: number, end: number, hash: number): string | undefined {
    let buf = this.body;
    let h = hash;
    let escaped = false;
    for (let k = start; k < end && !escaped; k++) escaped = buf[k] === BACKSLASH;
    if (escaped) {
      buf = Buffer.from(keyText(this.body, start, end));
      start = 0;
      end = buf.length;
      h = fnv(buf, 0, end);
    }
    for (let j = this.first.get(h); j !== undefined; j = this.next[j]! < 0 ? undefined : this.next[j]) {
      const other = this.buffers[j]!;
      if (other.compare(buf, start, end, this.starts[j]!, this.ends[j]!) === 0)
        return buf.toString('utf8', start, end);
    }
    const index = this.starts.length;
    this.next.push(this.first.get(h) ?? -1);
    this.first.set(h, index);
    this.buffers.push(buf);
    this.starts.push(start);
    this.ends.push(end);
    return undefined;
  }
}

/** The path the scan is at (a too-deep body's), as tooDeepPath writes it: `body` at the top. */
function pathOf(body: Buffer, containers: Uint8Array, segment: Int32Array): string {
  const keys: string[] = [];
  // containers holds levels 1..its length - 1, all open when the scan is too deep
  for (let d = 1; d <= PATH_SEGMENTS && d < containers.length; d++) {
    if (containers[d] === 0) keys.push(String(segment[2 * d]!));
    else keys.push(keyText(body, segment[2 * d]!, segment[2 * d + 1]!));
  }
  return keys.join('.') || 'body';
}

/** A key's text from its bytes (between its quotes), escapes read as JSON reads them. */
function keyText(body: Buffer, start: number, end: number): string {
  const raw = body.toString('utf8', start, end);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}
