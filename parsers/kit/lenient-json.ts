/**
 * Lenient JSON decoding with counted repairs. Only well-understood slips are repaired, each
 * named; anything else is a failure (the caller keeps the raw text as content).
 */
import { jsonrepair } from 'jsonrepair';
import { MAX_NESTING, nestsDeeper } from './json-scan.js';
import { pushAll } from '../../protocol/append-all.js';

export type JsonRepair =
  | 'trailing-comma'
  | 'python-literals'
  | 'single-quotes'
  | 'missing-brace'
  | 'raw-control-characters'
  | 'missing-comma'
  | 'unquoted-keys'
  | 'extra-brace'
  | 'escaped-quotes'
  | 'unescaped-quotes';

export interface Decoded {
  value: unknown;
  repairs: JsonRepair[];
}

export interface DecodeOptions {
  /** Allow closing up to 2 unclosed brackets (only at the real end of output). */
  allowMissingClose?: boolean;
  /** Internal: the text was already unescaped once (escaped-quotes). */
  noUnescape?: boolean;
  /**
   * Read a `"` inside a string that cannot end it as part of it (`unescaped-quotes`). Only for
   * callers whose readings are schema-gated by the engine (the repair is named on the call).
   */
  strayQuotes?: boolean;
}

function isWordStart(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

function isWordChar(c: number): boolean {
  return isWordStart(c) || (c >= 0x30 && c <= 0x39);
}

/** After a backslash: `" \\ / b f n r t u`, and `'` (a single-quoted string's own quote). */
function isJsonEscape(c: number): boolean {
  return (
    c === 0x22 ||
    c === 0x5c ||
    c === 0x2f ||
    c === 0x62 ||
    c === 0x66 ||
    c === 0x6e ||
    c === 0x72 ||
    c === 0x74 ||
    c === 0x75 ||
    c === 0x27
  );
}

/** 1e5 / 2.5E-3: the 'e' follows a digit or '.'. */
function isExponent(raw: string, i: number): boolean {
  const c = raw.charCodeAt(i);
  const p = raw.charCodeAt(i - 1);
  return (c === 0x65 || c === 0x45) && ((p >= 0x30 && p <= 0x39) || p === 0x2e);
}

/** Classifies the slips in `raw` in one pass outside strings. */
function classify(raw: string): {
  repairs: JsonRepair[];
  depth: number;
  inString: boolean;
  other: boolean;
  /** The brackets still open at the end, closed in order (`}]` for `[{`). */
  closers: string;
} {
  const found = new Set<JsonRepair>();
  let depth = 0;
  let quote = 0;
  let other = false;
  let lastSig = 0;
  /** Open brackets: whether each is a list (a `}{` inside one is two items glued). */
  const lists: boolean[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (quote !== 0) {
      if (c === 0x5c) {
        // an escape JSON does not have (`C:\Users`, `\$HOME`): the model wrote raw backslashes,
        // which jsonrepair would drop (`C:Users`); no repair of ours can tell what was meant
        if (!isJsonEscape(raw.charCodeAt(i + 1))) other = true;
        i++;
      } else if (c === quote) {
        quote = 0;
        lastSig = c;
      } else if (c < 0x20) {
        // a line break or tab written raw inside a string (a file's content, a multi-line
        // command): JSON wants it escaped, and the string's quotes still say where it ends
        found.add('raw-control-characters');
      }
      continue;
    }
    if (c === 0x22 || c === 0x27) {
      // a string right after a string (`"a" "b"`, `"""x"""` read as three): a missing comma and
      // quotes left unescaped look the same, and jsonrepair made keys of the pieces
      // (`{'content': """x"""}` read as `{"content": "", "x": ""}`): not a slip we repair
      if (lastSig === 0x22 || lastSig === 0x27) other = true;
      quote = c;
      if (c === 0x27) found.add('single-quotes');
    } else if (c === 0x7b || c === 0x5b) {
      // two objects of a list with no comma between them (`[{…}{…}]`): jsonrepair inserts it
      if (c === 0x7b && lastSig === 0x7d && lists[lists.length - 1] === true) found.add('missing-comma');
      lists.push(c === 0x5b);
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      if (lastSig === 0x2c) found.add('trailing-comma');
      lists.pop();
      depth--;
    } else if (isWordStart(c)) {
      // a bare word: True/False/None are a python slip we repair; true/false/null and exponents
      // are JSON; a key without quotes (`{path: "a"}`, a JavaScript object literal: Gemma 4 in
      // NousResearch/hermes-agent#7449, recall8) is one: a word right after `{` or `,` in an
      // object and right before `:`; anything else (prose, a bare value) is not a slip we repair
      let j = i;
      while (j < raw.length && isWordChar(raw.charCodeAt(j))) j++;
      const word = raw.slice(i, j);
      let k = j;
      while (k < raw.length && (raw.charCodeAt(k) === 0x20 || raw.charCodeAt(k) === 0x09)) k++;
      const key =
        (lastSig === 0x7b || lastSig === 0x2c) &&
        lists[lists.length - 1] === false &&
        raw.charCodeAt(k) === 0x3a;
      if (key) found.add('unquoted-keys');
      else if (word === 'True' || word === 'False' || word === 'None') found.add('python-literals');
      else if (word !== 'true' && word !== 'false' && word !== 'null' && !isExponent(raw, i)) other = true;
      i = j - 1;
    }
    if (c > 0x20) lastSig = c;
  }
  if (depth > 0) found.add('missing-brace');
  if (lastSig === 0x2c && depth > 0) other = true;
  const closers =
    depth > 0
      ? lists
          .map((l) => (l ? ']' : '}'))
          .reverse()
          .join('')
      : '';
  return { repairs: [...found], depth, inString: quote !== 0, other, closers };
}

/** The characters JSON's one-letter escapes stand for (`\\n` -> a line feed), by the letter. */
export const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/**
 * `{"name": "f", "arguments": {\"path\": \"a\"}}` -> `{"name": "f", "arguments": {"path": "a"}}`.
 * A backslash outside any string starts a run written as the content of a JSON string whose
 * quotes were lost: it is decoded as such (every escape JSON has; any other, or a raw `"` in the
 * run, refuses) and the decoded characters are read as JSON, so the run ends where the bracket
 * it began in closes. Decoding is the identity on brackets, blanks and literals, so where before
 * its first backslash the run began changes nothing: the reading is unique. Null when the text
 * holds no such run, a run begins outside every bracket, or a run cannot be decoded. One pass.
 */
export function unescapeOutsideStrings(text: string): string | null {
  let out = '';
  let last = 0;
  let depth = 0;
  let inString = false;
  let found = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x5c) {
      if (depth <= 0) return null;
      // the run: decoded characters tracked as JSON until the bracket it began in closes
      const runDepth = depth;
      out += text.slice(last, i);
      let dString = false;
      let dEscape = false;
      let j = i;
      while (j < text.length && depth >= runDepth) {
        let ch = text[j] as string;
        j++;
        if (ch === '"') return null;
        if (ch === '\\') {
          const e = text[j];
          j++;
          if (e === 'u') {
            const hex = text.slice(j, j + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) return null;
            ch = String.fromCharCode(Number.parseInt(hex, 16));
            j += 4;
          } else {
            const d = e === undefined ? undefined : SIMPLE_ESCAPES[e];
            if (d === undefined) return null;
            ch = d;
          }
        }
        out += ch;
        if (dString) {
          if (dEscape) dEscape = false;
          else if (ch === '\\') dEscape = true;
          else if (ch === '"') dString = false;
          continue;
        }
        if (ch === '"') dString = true;
        else if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') depth--;
      }
      found = true;
      last = j;
      i = j - 1;
    }
  }
  return found ? out + text.slice(last) : null;
}

const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

const isBlank = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function nextSolid(text: string, i: number): number {
  let j = i;
  while (j < text.length && isBlank(text.charCodeAt(j))) j++;
  return j;
}

/** At `i` (after a `,`): blanks, then a whole `"key"` and a `:`, as the next member of an object opens. */
function keyFollows(text: string, i: number): boolean {
  let j = nextSolid(text, i);
  if (text.charCodeAt(j) !== 0x22) return false;
  for (j++; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j++;
    else if (c === 0x22) return text.charCodeAt(nextSolid(text, j + 1)) === 0x3a;
  }
  return false;
}

/**
 * `{"content": "He said "hi" to me"}` -> `{"content": "He said \"hi\" to me"}`. Inside a string,
 * a `"` ends it only where JSON lets a string end: a key's before `:`; an object member's value
 * before `}`, the end of the text, or a `,` that the next member's `"key":` follows; a list
 * item's before `]` or `,`. Any other `"` cannot end the string, so it is part of it (weak
 * models write code, HTML and quoted speech into a string argument without escaping it).
 * Refused (null) when that reading is not the only one: a kept quote right before `:` (it looks
 * like a key, as if a comma were missing), a string opened by three quotes (Python's `"""…"""`
 * reads it otherwise), an odd count of kept quotes in one string (a quote
 * that should have closed the value was eaten, `"echo "hi"}`), a string with kept quotes ended
 * by a comma (the `, "key": "…` after it could be its own text too), a key given twice in one
 * object, a single-quoted string, a string left open, or no such quote at all. One pass; each
 * lookahead stops at the second next quote, so the cost is linear.
 */
export function escapeStrayQuotes(text: string): string | null {
  /** Open brackets: true for a list. */
  const lists: boolean[] = [];
  /** For each open object: whether a key comes next. */
  const wantKey: boolean[] = [];
  /** For each open bracket: the keys its object has had (a key given twice is refused). */
  const keys: Set<string>[] = [];
  const kept: number[] = [];
  let start = 0;
  let inString = false;
  let isKey = false;
  let keptHere = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const list = lists[lists.length - 1];
    if (inString) {
      if (c === 0x5c) {
        i++;
        continue;
      }
      if (c !== 0x22) continue;
      const j = nextSolid(text, i + 1);
      const n = text.charCodeAt(j);
      const ends = isKey
        ? n === 0x3a
        : list === undefined
          ? j >= text.length
          : list
            ? n === 0x5d || n === 0x2c || j >= text.length
            : n === 0x7d ||
              j >= text.length ||
              (n === 0x2c && (keyFollows(text, j + 1) || text.charCodeAt(nextSolid(text, j + 1)) === 0x7d));
      if (ends) {
        // an odd count: a quote that should have closed the value was eaten; a comma close after
        // kept quotes: the `, "key": ` after it could be the string's own text as well
        if (keptHere % 2 !== 0 || (keptHere > 0 && n === 0x2c)) return null;
        if (isKey) {
          const seen = keys[keys.length - 1];
          const key = text.slice(start, i);
          if (seen === undefined || seen.has(key)) return null;
          seen.add(key);
        }
        inString = false;
      } else {
        // a value opened by three quotes is Python's triple-quoted string as much as quotes left
        // unescaped (`"""x"""`: `x` or `""x""`): which one is a guess
        if (n === 0x3a || (i === start && text.charCodeAt(i + 1) === 0x22)) return null;
        kept.push(i);
        keptHere++;
      }
      continue;
    }
    if (c === 0x22) {
      inString = true;
      isKey = list === false && wantKey[wantKey.length - 1] === true;
      keptHere = 0;
      start = i + 1;
    } else if (c === 0x27) return null;
    else if (c === 0x7b || c === 0x5b) {
      lists.push(c === 0x5b);
      wantKey.push(c === 0x7b);
      keys.push(new Set());
    } else if (c === 0x7d || c === 0x5d) {
      lists.pop();
      wantKey.pop();
      keys.pop();
    } else if (list === false && (c === 0x2c || c === 0x3a)) wantKey[wantKey.length - 1] = c === 0x2c;
  }
  if (inString || kept.length === 0) return null;
  let out = '';
  let last = 0;
  for (const k of kept) {
    out += `${text.slice(last, k)}\\`;
    last = k;
  }
  return out + text.slice(last);
}

/** JSON.parse, then the named repairs; null when the text is not (repairably) JSON. */
export function decodeJsonLenient(raw: string, opts: DecodeOptions = {}): Decoded | null {
  const d = decodeCore(raw, opts);
  if (d !== null || !opts.strayQuotes || !raw.includes('"')) return d;
  const text = raw.trim();
  if (nestsDeeper(text, MAX_NESTING)) return null;
  const fixed = escapeStrayQuotes(text);
  if (fixed === null) return null;
  const inner = decodeCore(fixed, { ...opts, strayQuotes: false });
  return inner ? { value: inner.value, repairs: [...inner.repairs, 'unescaped-quotes'] } : null;
}

function decodeCore(raw: string, opts: DecodeOptions): Decoded | null {
  const text = raw.trim();
  if (text === '') return null;
  // jsonrepair and JSON.stringify recurse: hostile nesting is "not JSON", never a RangeError
  if (nestsDeeper(text, MAX_NESTING)) return null;
  try {
    return { value: parseKeepingHugeNumbers(text), repairs: [] };
  } catch {
    // fall through to repairs
  }
  // quotes escaped outside any string (`{\"path\": \"a\"}`, gpt-oss-20b in
  // langchain-ai/langchain-gradient#31): the value JSON-encoded once more than its envelope,
  // its string quotes lost; decoded once, only here (the decoded text is not unescaped again)
  if (!opts.noUnescape && text.includes('\\')) {
    const un = unescapeOutsideStrings(text);
    if (un !== null) {
      const inner = decodeJsonLenient(un, { ...opts, noUnescape: true });
      return inner ? { value: inner.value, repairs: [...inner.repairs, 'escaped-quotes'] } : null;
    }
  }
  const c = classify(text);
  // one or two `}` past the end of a complete object (yigit353/langchain-qwq#30, QwQ): the
  // object before them, if it is JSON (or repairably so) on its own
  if (c.depth < 0 && c.depth >= -2 && !c.inString && text.endsWith('}'.repeat(-c.depth))) {
    const inner = decodeJsonLenient(text.slice(0, text.length + c.depth), opts);
    return inner && isObject(inner.value)
      ? { value: inner.value, repairs: [...inner.repairs, 'extra-brace'] }
      : null;
  }
  if (c.other || c.inString || c.depth < 0 || c.repairs.length === 0) return null;
  if (c.repairs.includes('missing-brace') && (!opts.allowMissingClose || c.depth > 2)) return null;
  // only closers missing: append them (jsonrepair's cost grows faster than the text on a long
  // string value, 12 -> 170 ms for 256 -> 1,024 KB)
  if (c.repairs.length === 1 && c.closers !== '') {
    try {
      return { value: parseKeepingHugeNumbers(text + c.closers), repairs: c.repairs };
    } catch {
      // not only closers after all (`{"a":`): jsonrepair decides, as before
    }
  }
  try {
    return { value: parseKeepingHugeNumbers(jsonrepair(text)), repairs: c.repairs };
  } catch {
    return null;
  }
}

/**
 * JSON.parse, except that a number too large for a double (`1e999`, `-1e999`) stays the text
 * the model wrote: JSON.parse makes it Infinity, which JSON.stringify would silently turn into
 * null. The second pass runs only when the first found such a number.
 */
function parseKeepingHugeNumbers(text: string): unknown {
  const v: unknown = JSON.parse(text);
  return hasNonFinite(v) ? JSON.parse(quoteHugeNumbers(text)) : v;
}

/** Quotes every number token outside strings that is not finite as a double (one pass). */
function quoteHugeNumbers(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && /[0-9eE+\-.]/.test(text[j]!)) j++;
      const token = text.slice(i, j);
      if (!Number.isFinite(Number(token))) {
        out += `${text.slice(last, i)}"${token}"`;
        last = j;
      }
      i = j - 1;
    }
  }
  return out + text.slice(last);
}

/** Does a decoded value hold a number JSON cannot carry (Infinity, NaN)? Iterative walk. */
export function hasNonFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return true;
    } else if (Array.isArray(v)) pushAll(stack, v);
    else if (typeof v === 'object' && v !== null) pushAll(stack, Object.values(v));
  }
  return false;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * An empty argument object without a prototype. Parsers that build arguments key by key
 * (XML-ish params, Python kwargs) must start from this: on a `{}`, a parameter named
 * `__proto__` is swallowed by the prototype setter (and an object value even becomes the
 * prototype, so `required` checks see inherited keys). Here every name is an own data key.
 */
export function createArgs(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/**
 * Are these decoded arguments safe to canonicalise? Walks iteratively (no recursion): nesting
 * at most MAX_NESTING, and every object a plain record (prototype Object.prototype or null), so
 * no parameter was swallowed into a prototype by a parser that assigned `__proto__` on `{}`.
 * Returns the reason when not.
 */
export function unsafeArguments(value: unknown): string | null {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 1 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop() as { v: unknown; depth: number };
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_NESTING) return 'arguments nest too deep';
    if (Array.isArray(v)) {
      for (const x of v) stack.push({ v: x, depth: depth + 1 });
      continue;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return 'argument object has a foreign prototype';
    for (const k of Object.keys(v)) stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1 });
  }
  return null;
}

/**
 * Normalises call arguments: an object stays, a JSON string is decoded (vLLM and some models
 * double-encode), anything else is null (not an object: the safety rules reject it).
 */
export function normalizeArguments(
  args: unknown,
  opts: DecodeOptions = {},
): { value: Record<string, unknown>; repairs: string[] } | null {
  if (args === undefined) return { value: {}, repairs: ['missing-arguments'] };
  if (isPlainObject(args)) return { value: args, repairs: [] };
  if (typeof args === 'string') {
    if (args.trim() === '') return { value: {}, repairs: ['empty-arguments'] };
    const d = decodeJsonLenient(args, opts);
    if (d && isPlainObject(d.value)) return { value: d.value, repairs: ['string-arguments', ...d.repairs] };
  }
  return null;
}
