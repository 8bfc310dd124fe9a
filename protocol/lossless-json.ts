/**
 * Client numbers and key order, kept through a re-serialization.
 *
 * JSON.parse turns every number into a double and every object into a JavaScript object, so
 * JSON.stringify of a parsed value is not always what was sent: `12345678901234567890` comes back
 * as `12345678901234567000`, `1e400` as `null`, `-0` as `0`, `1.0` as `1`, and an object whose keys
 * look like array indices (`{"2":..,"1":..}`) comes back with those keys sorted. When toolproof
 * rewrites a request (a forced tool added, a history repaired, another front door translated),
 * the client's own values must still reach the upstream as written: a seed, a schema's `maximum`,
 * an `enum` of big ids, the keys of `logit_bias`.
 *
 * How, without a second JSON reader for the working value (everything downstream keeps reading
 * plain JSON.parse values):
 * - keepSourceText(value, bytes) runs after the parse. A cheap scan of the bytes (mayNotRoundTrip)
 *   tells whether any number is spelled other than JSON.stringify spells it, or any key is all
 *   digits; almost every request has neither, and the scan is all it pays. Otherwise one walk
 *   over the bytes, in step with the parsed value, finds the containers whose own members would
 *   change (a number, or the order of their keys) and gives each its exact source text, through a
 *   non-enumerable `toJSON` that is inert (returns the object itself) except inside
 *   stringifyJson. A number directly in the top-level object (a `seed`) has no container of its
 *   own that survives a rewrite (`{...request, tools}`), so those are kept by key on the root.
 * - stringifyJson(value, base?) is JSON.stringify (native speed) with each such container written
 *   as its source text. Everything else comes out exactly as JSON.stringify writes it.
 *
 * What is not kept: a container toolproof copies with changes (`{...message, content}`) is
 * written from its values (JSON.stringify's numbers); a body with a duplicate key, or an object
 * with its own "toJSON" key, keeps JSON.stringify's behaviour (the walk cannot tell which
 * duplicate survived; the key cannot be shadowed).
 */
import { stringEnd } from './json-string-end.js';

/**
 * The source of each annotated container: its bytes in a copy of the outermost annotated range
 * around it (containers nest: one copy per outermost range keeps memory within the body's size,
 * where a string per container would hold nested text once per level).
 */
interface Span {
  bytes: Buffer;
  start: number;
  end: number;
}
const SOURCE = new WeakMap<object, Span | string>();
/** Top-level number members spelled otherwise than JSON.stringify spells them, by key. */
const ROOT_NUMBERS = new WeakMap<object, ReadonlyMap<string, string>>();

/** The source texts collected by the stringifyJson in progress, or undefined outside it. */
let collecting: string[] | undefined;

const MARK = '\u0000toolproof-source\u0000';
const MARK_RE = /"\\u0000toolproof-source\\u0000(\d+)"/g;

/** Inert outside stringifyJson: JSON.stringify then writes the object as usual. */
function sourceToJSON(this: object): unknown {
  const source = SOURCE.get(this);
  if (collecting === undefined || source === undefined) return this;
  collecting.push(
    typeof source === 'string' ? source : source.bytes.toString('utf8', source.start, source.end),
  );
  return `${MARK}${collecting.length - 1}`;
}

/** A number written as given (a top-level member of a rewritten request). */
class SourceNumber {
  constructor(text: string) {
    SOURCE.set(this, text);
  }
  toJSON(): unknown {
    return collecting === undefined ? Number(SOURCE.get(this)) : sourceToJSON.call(this);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * JSON.stringify of `value`, with the client's containers that JSON.stringify would change
 * written as the client wrote them (see above). `base`: the client's top-level object that
 * `value` was made from (a spread copy of it), whose number members are kept by key.
 */
export function stringifyJson(value: unknown, base?: unknown): string {
  let v = value;
  const root = isRecord(base) ? base : undefined;
  const numbers = root === undefined ? undefined : ROOT_NUMBERS.get(root);
  if (root !== undefined && numbers !== undefined && isRecord(value)) {
    let copy: Record<string, unknown> | undefined;
    for (const [key, text] of numbers) {
      if (key === '__proto__' || !Object.hasOwn(value, key) || !Object.is(value[key], root[key])) continue;
      copy ??= { ...value };
      copy[key] = new SourceNumber(text);
    }
    if (copy !== undefined) v = copy;
  }
  const outer = collecting;
  const texts: string[] = [];
  collecting = texts;
  let out: string;
  try {
    out = JSON.stringify(v);
  } finally {
    collecting = outer;
  }
  if (texts.length === 0 || out === undefined) return out;
  let seen = 0;
  const joined = out.replace(MARK_RE, (_m, i: string) => {
    seen++;
    return texts[Number(i)] ?? '';
  });
  // A string of the value itself spelled the marker: keep JSON.stringify's text, never a guess.
  return seen === texts.length ? joined : JSON.stringify(value);
}

// Bytes.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

/** A byte that continues a JSON number: digit, `.`, `e`, `E`, `+`, `-`. */
function inNumber(c: number): boolean {
  return isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function numberEnd(bytes: Buffer, at: number): number {
  let j = at + 1;
  while (j < bytes.length && inNumber(bytes[j]!)) j++;
  return j;
}

/** Does the number token `text` come back otherwise from JSON.stringify(JSON.parse(text))? */
function changes(text: string): boolean {
  return String(Number(text)) !== text;
}

/** Does a number at [from, to) possibly change? Cheap first: short plain integers never do. */
function numberChanges(bytes: Buffer, from: number, to: number): boolean {
  if (to - from <= 15) {
    let plain = bytes[from] !== MINUS || to - from > 1;
    for (let k = bytes[from] === MINUS ? from + 1 : from; plain && k < to; k++) plain = isDigit(bytes[k]!);
    // Integers of up to 15 digits are exact doubles and JSON has no leading zeros; "-0" is not.
    if (plain && !(bytes[from] === MINUS && bytes[from + 1] === DIGIT_0)) return false;
  }
  return changes(bytes.toString('latin1', from, to));
}

function allDigits(bytes: Buffer, from: number, to: number): boolean {
  if (to <= from) return false;
  for (let k = from; k < to; k++) if (!isDigit(bytes[k]!)) return false;
  return true;
}

function nextNonSpace(bytes: Buffer, from: number): number {
  let j = from;
  while (j < bytes.length && isSpace(bytes[j]!)) j++;
  return bytes[j] ?? -1;
}

/**
 * Could JSON.stringify of the value parsed from `bytes` differ from them other than in
 * whitespace and string escapes? True when some number is spelled otherwise than JSON.stringify
 * spells it, or some key is all digits (JavaScript may reorder it). One pass; strings, most of a
 * request, are skipped with indexOf.
 */
export function mayNotRoundTrip(bytes: Buffer): boolean {
  const n = bytes.length;
  for (let i = 0; i < n; ) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const end = stringEnd(bytes, i);
      if (end - i <= 11 && allDigits(bytes, i + 1, end) && nextNonSpace(bytes, end + 1) === COLON)
        return true;
      i = end + 1;
    } else if (c === MINUS || isDigit(c)) {
      const end = numberEnd(bytes, i);
      if (numberChanges(bytes, i, end)) return true;
      i = end;
    } else i++;
  }
  return false;
}

/**
 * At most this many containers and top-level numbers, together, keep their source (a tool schema
 * has a handful; each costs a property and a map entry, a top-level number an object and a
 * marker in every stringifyJson). A body with more keeps none: JSON.stringify's behaviour.
 * Top-level numbers count too: 1M root members spelled `1.0` stalled the loop 13 s (issue 27).
 */
export const MAX_KEPT = 10_000;

/** One open container of the walk (reused by depth: a hostile body has millions). */
class Frame {
  node: Record<string, unknown> | unknown[] = [];
  array = false;
  /** Offset of the opening bracket. */
  start = 0;
  /**
   * JavaScript's keys of the object. JSON.parse defines members in source order, and only
   * index-like keys ("0", "17") are enumerated first: without those, the n-th key in the source
   * is own[n], and no key needs decoding.
   */
  own: string[] = [];
  /** The source's keys, decoded, when some key is index-like (their order may differ). */
  keys: string[] | undefined = undefined;
  /** Members or elements begun so far. */
  index = 0;
  /** The key of the member whose value comes next. */
  key: string | undefined = '';
  /** Some member would be spelled otherwise by JSON.stringify (a number, or the key order). */
  dirty = false;
  numbers: Map<string, string> | undefined = undefined;
}

/** The key whose quotes are at `from` and `to`, decoded. */
function decodeKey(bytes: Buffer, from: number, to: number): string {
  // Only this key's bytes are looked at: an indexOf could run to the end of the body per key.
  for (let k = from + 1; k < to; k++)
    if (bytes[k] === BACKSLASH) return JSON.parse(bytes.toString('utf8', from, to + 1)) as string;
  return bytes.toString('utf8', from + 1, to);
}

/** An array-index-like key, which JavaScript enumerates before the others, in numeric order. */
function indexLike(key: string | undefined): boolean {
  return key !== undefined && /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32 - 1;
}

/** The value the next element or member of `f` holds in the parsed value. */
function childOf(f: Frame): unknown {
  if (f.array) return (f.node as unknown[])[f.index - 1];
  const node = f.node as Record<string, unknown>;
  const key = f.key;
  if (key === undefined || !Object.hasOwn(node, key)) return undefined;
  // A "__proto__" member is an own data property (JSON.parse defines it): read it as one.
  return key === '__proto__' ? Object.getOwnPropertyDescriptor(node, key)?.value : node[key];
}

/**
 * Annotates `value`, which JSON.parse made of `bytes` (the same bytes, unchanged), so that
 * stringifyJson writes the client's numbers and key order as they were (see the module comment).
 * Costs one scan of the bytes when nothing needs keeping. `whole`: `value` itself may be written
 * back unchanged (a tool input), so it keeps its own text too; a request body is always copied
 * before it is written (`{...request, tools}`), and only its top-level numbers are kept.
 */
export function keepSourceText(value: unknown, bytes: Buffer, whole = false): void {
  if (typeof value !== 'object' || value === null || !mayNotRoundTrip(bytes)) return;
  const found = walk(value, bytes, whole);
  if (found === undefined) return;
  for (const [node, span] of found.sources) {
    if (Object.hasOwn(node, 'toJSON')) continue;
    Object.defineProperty(node, 'toJSON', {
      value: sourceToJSON,
      enumerable: false,
      writable: true,
      configurable: true,
    });
    SOURCE.set(node, span);
  }
  if (found.rootNumbers !== undefined && found.rootNumbers.size > 0)
    ROOT_NUMBERS.set(value, found.rootNumbers);
}

interface Found {
  sources: Array<[object, Span]>;
  rootNumbers: Map<string, string> | undefined;
}

/** The walk in step with the parsed value; undefined when it cannot be trusted (duplicate keys). */
function walk(root: object, bytes: Buffer, whole: boolean): Found | undefined {
  const ranges: Array<[object, number, number]> = [];
  let rootNumbers: Map<string, string> | undefined;
  const frames: Frame[] = [];
  let depth = 0;
  let expectKey = false;
  const n = bytes.length;
  for (let i = 0; i < n; ) {
    const c = bytes[i]!;
    const top = depth > 0 ? frames[depth - 1]! : undefined;
    // An array element begins (objects count members at their key).
    if (top?.array && c !== 0x5d && c !== COMMA && !isSpace(c)) top.index++;
    if (c === 0x7b || c === 0x5b) {
      const node = top === undefined ? root : childOf(top);
      const array = c === 0x5b;
      if (typeof node !== 'object' || node === null || Array.isArray(node) !== array) return undefined;
      const f = (frames[depth] ??= new Frame());
      depth++;
      f.node = node as Frame['node'];
      f.array = array;
      f.start = i;
      f.own = array ? [] : Object.keys(node);
      f.keys = !array && indexLike(f.own[0]) ? [] : undefined;
      f.index = 0;
      f.key = '';
      f.dirty = false;
      f.numbers = undefined;
      expectKey = !array;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      if (top === undefined) return undefined;
      depth--;
      let dirty = top.dirty;
      if (!top.array) {
        if (top.index !== top.own.length) return undefined; // a duplicate key
        if (top.keys?.some((k, j) => k !== top.own[j])) dirty = true;
      }
      if (depth === 0) rootNumbers = top.numbers;
      if (dirty && (depth > 0 || whole)) {
        // Bounded work and memory for a hostile body: past the cap, JSON.stringify's behaviour.
        if (ranges.length + (frames[0]?.numbers?.size ?? 0) >= MAX_KEPT) return undefined;
        ranges.push([top.node, top.start, i + 1]);
      }
      expectKey = false;
      i++;
    } else if (c === QUOTE) {
      const end = stringEnd(bytes, i);
      if (expectKey && top !== undefined && !top.array) {
        if (top.keys !== undefined) {
          top.key = decodeKey(bytes, i, end);
          top.keys.push(top.key);
        } else top.key = top.own[top.index];
        top.index++;
        expectKey = false;
      }
      i = end + 1;
    } else if (c === MINUS || isDigit(c)) {
      const end = numberEnd(bytes, i);
      const atRoot = depth === 1 && top !== undefined && !top.array;
      // Once a container is written from its source, its other numbers need no look.
      if (top !== undefined && (!top.dirty || atRoot) && numberChanges(bytes, i, end)) {
        top.dirty = true;
        if (atRoot && top.key !== undefined) {
          top.numbers ??= new Map();
          if (ranges.length + top.numbers.size >= MAX_KEPT) return undefined;
          top.numbers.set(top.key, bytes.toString('latin1', i, end));
        }
      }
      i = end;
    } else if (c === 0x74 || c === 0x6e) {
      i += 4; // true, null
    } else if (c === 0x66) {
      i += 5; // false
    } else {
      if (c === COMMA && top !== undefined && !top.array) expectKey = true;
      i++;
    }
  }
  return { sources: spans(ranges, bytes), rootNumbers };
}

/** Ranges (nested or apart, inner ones first) as spans over one copy per outermost range. */
function spans(ranges: Array<[object, number, number]>, bytes: Buffer): Array<[object, Span]> {
  const out: Array<[object, Span]> = [];
  // Closed inner-first, so an outer range comes after all it holds: walk back to meet it first.
  let outer: Span | undefined;
  let outerStart = 0;
  for (let k = ranges.length - 1; k >= 0; k--) {
    const [node, start, end] = ranges[k]!;
    if (outer === undefined || start < outerStart || end > outerStart + outer.bytes.length) {
      outer = { bytes: Buffer.from(bytes.subarray(start, end)), start: 0, end: end - start };
      outerStart = start;
      out.push([node, outer]);
    } else out.push([node, { bytes: outer.bytes, start: start - outerStart, end: end - outerStart }]);
  }
  return out;
}
