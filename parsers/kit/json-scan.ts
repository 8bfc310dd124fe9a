/**
 * Linear scanners over model output. No regexes with backtracking: one pass, string and escape
 * aware, so a 1 MB hostile input costs one walk.
 */

export interface ScanOptions {
  /** Also treat '...' and (...) as strings / brackets (Python literals). */
  singleQuotes?: boolean;
  /** Stop (as if the text ended) at any of these literals outside strings, e.g. '</tool_call>'. */
  stopAt?: readonly string[];
}

/** Result of scanning a bracketed value: `end` is the index after it; -1 when the text ran out first. */
export interface ScanResult {
  end: number;
  /** Open brackets still unclosed when the text ran out (end === -1). */
  depth: number;
  /** The text ran out inside a string. */
  inString: boolean;
  /** Where opts.stopAt was met (end === -1), else -1. */
  stoppedAt?: number;
}

/** `text[from, to)` parsed as one strict JSON object (not an array, not null); null otherwise. */
export function strictObject(text: string, from: number, to: number): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text.slice(from, to));
  } catch {
    return null;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/**
 * Finds the end of the JSON object/array (or string) starting at `start`. Bracket kinds are
 * not matched against each other (lenient); only depth is counted.
 * Returns null when text[start] does not open a value this scanner understands.
 */
export function scanJsonValue(text: string, start: number, opts: ScanOptions = {}): ScanResult | null {
  const first = text.charCodeAt(start);
  if (first !== 0x7b && first !== 0x5b && first !== 0x22 && !(opts.singleQuotes && first === 0x27))
    return null;
  return scanFrom(text, start, opts.singleQuotes === true, opts.stopAt);
}

/**
 * Index after the Python-style value at `start`: a `(…)`, `[…]` or `{…}` group or a `'…'` /
 * `"…"` string, the strings inside skipped (backslash escapes) and, as in scanJsonValue, only
 * the depth counted (bracket kinds are not matched). -1 when the text ends first, or when
 * text[start] opens none of these.
 */
export function groupEnd(text: string, start: number): number {
  const first = text.charCodeAt(start);
  if (first !== 0x28 && first !== 0x7b && first !== 0x5b && first !== 0x22 && first !== 0x27) return -1;
  return scanFrom(text, start, true, undefined).end;
}

/** The one walk behind scanJsonValue and groupEnd; text[start] opens a value. */
function scanFrom(
  text: string,
  start: number,
  singleQuotes: boolean,
  stops: readonly string[] | undefined,
): ScanResult {
  let depth = 0;
  let quote = 0;
  const stopCodes =
    stops !== undefined && stops.length > 0 ? new Set(stops.map((x) => x.charCodeAt(0))) : undefined;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 0x5c) i++;
      else if (c === quote) {
        quote = 0;
        if (depth === 0) return { end: i + 1, depth: 0, inString: false };
      }
      continue;
    }
    if (stopCodes?.has(c)) {
      for (const stop of stops!)
        if (text.startsWith(stop, i)) return { end: -1, depth, inString: false, stoppedAt: i };
    }
    if (c === 0x22 || (singleQuotes && c === 0x27)) quote = c;
    else if (c === 0x5c) {
      // no meaning in JSON outside a string: `{\"path\": \"a}\"}` is a value escaped once too
      // often (lenient-json.ts unescapeOutsideStrings), its strings delimited by `\"`
      const e = escapedStringEnd(text, i);
      if (e < 0) return { end: -1, depth, inString: true };
      i = e - 1;
    } else if (c === 0x7b || c === 0x5b || (singleQuotes && c === 0x28)) depth++;
    else if (c === 0x7d || c === 0x5d || (singleQuotes && c === 0x29)) {
      depth--;
      if (depth <= 0) return { end: i + 1, depth: 0, inString: false };
    }
  }
  return { end: -1, depth, inString: quote !== 0 };
}

/**
 * Index after what a backslash outside any string at i spells: `\"…\"`, a string escaped once
 * too often (inside it `\\\"` and `\\\\` are its own escapes, `\\n` and the like one character);
 * any other escape, its two characters. -1 when the text ends inside such a string.
 */
function escapedStringEnd(text: string, i: number): number {
  if (text.charCodeAt(i + 1) !== 0x22) return Math.min(i + 2, text.length);
  let j = i + 2;
  while (j < text.length) {
    if (text.charCodeAt(j) !== 0x5c) {
      j++;
      continue;
    }
    const e = text.charCodeAt(j + 1);
    if (e === 0x22) return j + 2;
    // `\\` is a backslash the string escapes with: the character after it is escaped too
    if (e === 0x5c) j += text.charCodeAt(j + 2) === 0x5c ? 4 : 3;
    else j += 2;
  }
  return -1;
}

/**
 * Nesting cap for anything decoded from model output. Deeper input is not a call (it stays
 * content): JSON.stringify, jsonrepair and every recursive walker downstream would otherwise
 * throw RangeError on 100k-level nesting (a 500 for the client).
 */
export const MAX_NESTING = 512;

/**
 * Does the bracket nesting in text[from..to) go deeper than max? One linear pass, string aware
 * ('...' strings too with singleQuotes), so it is safe to run before any recursive decoder.
 */
export function nestsDeeper(
  text: string,
  max: number,
  opts: { from?: number; to?: number; singleQuotes?: boolean } = {},
): boolean {
  let depth = 0;
  let quote = 0;
  const to = opts.to ?? text.length;
  for (let i = opts.from ?? 0; i < to; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 0x5c) i++;
      else if (c === quote) quote = 0;
      continue;
    }
    if (c === 0x22 || (opts.singleQuotes === true && c === 0x27)) quote = c;
    else if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > max) return true;
    } else if ((c === 0x7d || c === 0x5d || c === 0x29) && depth > 0) depth--;
  }
  return false;
}

export function isWs(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d;
}

/** Index of the first non-whitespace character at or after i (text.length if none). */
export function skipWs(text: string, i: number): number {
  while (i < text.length && isWs(text.charCodeAt(i))) i++;
  return i;
}

/** Index after the last non-whitespace character before end. */
export function trimEndIndex(text: string, end: number, floor = 0): number {
  while (end > floor && isWs(text.charCodeAt(end - 1))) end--;
  return end;
}

/**
 * Does `lit` occur at i? 'need-more' when the text ends inside a prefix of it and more text
 * may still come (stream parsers must not decide on a partial tag).
 */
export function expectLiteral(
  text: string,
  i: number,
  lit: string,
  final: boolean,
): 'yes' | 'no' | 'need-more' {
  const avail = text.length - i;
  if (avail >= lit.length) return text.startsWith(lit, i) ? 'yes' : 'no';
  if (lit.startsWith(text.slice(i))) return final ? 'no' : 'need-more';
  return 'no';
}

/** Longest language tag read after an opening code fence. */
const MAX_FENCE_LANG = 16;

/**
 * Where the body of a code fence opened at i begins (after "```", an optional `json` tag of any
 * case and whitespace); null when no fence opens there or its tag is another language,
 * 'need-more' while the text ends before that is known.
 */
export function jsonFenceBody(text: string, i: number, final: boolean): number | 'need-more' | null {
  const fence = expectLiteral(text, i, '```', final);
  if (fence !== 'yes') return fence === 'need-more' ? 'need-more' : null;
  const tagAt = i + 3;
  let lang = tagAt;
  while (lang < text.length && lang - tagAt <= MAX_FENCE_LANG && /[A-Za-z]/.test(text[lang]!)) lang++;
  if (lang >= text.length) return final ? null : 'need-more';
  const tag = text.slice(tagAt, lang).toLowerCase();
  if (tag !== '' && tag !== 'json') return null;
  const j = skipWs(text, lang);
  if (j >= text.length) return final ? null : 'need-more';
  return j;
}

/** Reads an identifier-like tool name ([A-Za-z0-9_.-]+, plus ':' when allowColon) at i; '' if none. */
export function readName(text: string, i: number, extra = ''): string {
  let j = i;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    const ok =
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      c === 0x5f ||
      c === 0x2d ||
      c === 0x2e ||
      extra.includes(text[j] ?? '');
    if (!ok) break;
    j++;
  }
  return text.slice(i, j);
}
