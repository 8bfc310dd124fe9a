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

/** The source text of each annotated container. */
const SOURCE = new WeakMap<object, string>();
/** Top-level number members spelled otherwise than JSON.stringify spells them, by key. */
const ROOT_NUMBERS = new WeakMap<object, ReadonlyMap<string, string>>();

/** The source texts collected by the stringifyJson in progress, or undefined outside it. */
let collecting: string[] | undefined;

const MARK = '\u0000toolproof-source\u0000';
const MARK_RE = /"\\u0000toolproof-source\\u0000(\d+)"/g;

/** Inert outside stringifyJson: JSON.stringify then writes the object as usual. */
function sourceToJSON(this: object): unknown {
  const text = SOURCE.get(this);
  if (collecting === undefined || text === undefined) return this;
  collecting.push(text);
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

/** True when the value parsed from `bytes` was annotated to keep some of its source text. */
export function hasSourceText(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (SOURCE.has(value) || ROOT_NUMBERS.has(value));
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

/** The index of the quote closing the string whose opening quote is at `at`. */
function stringEnd(bytes: Buffer, at: number): number {
  let j = bytes.indexOf(QUOTE, at + 1);
  for (;;) {
    if (j < 0) return bytes.length;
    let backslashes = 0;
    while (bytes[j - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return j;
    j = bytes.indexOf(QUOTE, j + 1);
  }
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

interface Frame {
  node: Record<string, unknown> | unknown[];
  array: boolean;
  /** Offset of the opening bracket. */
  start: number;
  /** Object keys in source order. */
  keys: string[];
  /** Elements of an array so far. */
  index: number;
  /** The key whose value comes next (objects). */
  key: string;
  /** A number member that JSON.stringify would spell otherwise. */
  dirty: boolean;
  numbers: Map<string, string> | undefined;
}

/** The key whose quotes are at `from` and `to`, decoded. */
function decodeKey(bytes: Buffer, from: number, to: number): string {
  // Only this key's bytes are looked at: an indexOf could run to the end of the body per key.
  for (let k = from + 1; k < to; k++)
    if (bytes[k] === BACKSLASH) return JSON.parse(bytes.toString('utf8', from, to + 1)) as string;
  return bytes.toString('utf8', from + 1, to);
}

/** The value the next element or member of `f` holds in the parsed value. */
function childOf(f: Frame): unknown {
  if (f.array) return (f.node as unknown[])[f.index];
  const node = f.node as Record<string, unknown>;
  if (!Object.hasOwn(node, f.key)) return undefined;
  // A "__proto__" member is an own data property (JSON.parse defines it): read it as one.
  return f.key === '__proto__' ? Object.getOwnPropertyDescriptor(node, f.key)?.value : node[f.key];
}

/** True when the keys JavaScript enumerates are the source's keys in the source's order. */
function sameOrder(node: Record<string, unknown>, keys: readonly string[]): boolean | 'duplicate' {
  const own = Object.keys(node);
  if (own.length !== keys.length) return 'duplicate';
  for (let k = 0; k < own.length; k++) if (own[k] !== keys[k]) return false;
  return true;
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
  for (const [node, text] of found.sources) {
    if (Object.hasOwn(node, 'toJSON')) continue;
    Object.defineProperty(node, 'toJSON', {
      value: sourceToJSON,
      enumerable: false,
      writable: true,
      configurable: true,
    });
    SOURCE.set(node, text);
  }
  if (found.rootNumbers !== undefined && found.rootNumbers.size > 0)
    ROOT_NUMBERS.set(value, found.rootNumbers);
}

interface Found {
  sources: Array<[object, string]>;
  rootNumbers: Map<string, string> | undefined;
}

/** The walk in step with the parsed value; undefined when it cannot be trusted (duplicate keys). */
function walk(root: object, bytes: Buffer, whole: boolean): Found | undefined {
  const sources: Array<[object, string]> = [];
  let rootNumbers: Map<string, string> | undefined;
  const stack: Frame[] = [];
  let expectKey = false;
  const n = bytes.length;
  const done = (f: Frame | undefined) => {
    if (f?.array) f.index++;
  };
  for (let i = 0; i < n; ) {
    const c = bytes[i]!;
    const top = stack[stack.length - 1];
    if (c === 0x7b || c === 0x5b) {
      const node = top === undefined ? root : childOf(top);
      const array = c === 0x5b;
      if (typeof node !== 'object' || node === null || Array.isArray(node) !== array) return undefined;
      stack.push({
        node: node as Frame['node'],
        array,
        start: i,
        keys: [],
        index: 0,
        key: '',
        dirty: false,
        numbers: undefined,
      });
      expectKey = !array;
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      const f = stack.pop();
      if (f === undefined) return undefined;
      let dirty = f.dirty;
      if (!f.array) {
        const order = sameOrder(f.node as Record<string, unknown>, f.keys);
        if (order === 'duplicate') return undefined;
        if (!order) dirty = true;
      }
      if (stack.length === 0) rootNumbers = f.numbers;
      if (dirty && (stack.length > 0 || whole))
        sources.push([f.node, bytes.toString('utf8', f.start, i + 1)]);
      done(stack[stack.length - 1]);
      expectKey = false;
      i++;
    } else if (c === QUOTE) {
      const end = stringEnd(bytes, i);
      if (expectKey && top !== undefined && !top.array) {
        top.key = decodeKey(bytes, i, end);
        top.keys.push(top.key);
        expectKey = false;
      } else done(top);
      i = end + 1;
    } else if (c === MINUS || isDigit(c)) {
      const end = numberEnd(bytes, i);
      if (top !== undefined && numberChanges(bytes, i, end)) {
        top.dirty = true;
        if (stack.length === 1 && !top.array)
          (top.numbers ??= new Map()).set(top.key, bytes.toString('latin1', i, end));
      }
      done(top);
      i = end;
    } else if (c === 0x74 || c === 0x6e) {
      done(top); // true, null
      i += 4;
    } else if (c === 0x66) {
      done(top); // false
      i += 5;
    } else {
      if (c === COMMA && top !== undefined && !top.array) expectKey = true;
      i++;
    }
  }
  return { sources, rootNumbers };
}
