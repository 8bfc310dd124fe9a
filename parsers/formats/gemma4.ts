/**
 * Gemma 4 (vLLM `gemma4`): `<|tool_call>call:NAME{key:value,…}<tool_call|>`, one call per
 * envelope. Its argument syntax is not JSON: keys are bare, strings are wrapped in the `<|"|>`
 * token instead of quotes (so they need no escaping), and numbers, booleans, null, lists and
 * nested objects are bare. FunctionGemma uses the same syntax with `<escape>` (function-gemma.ts).
 * A leaked thinking block, `<|channel>thought\n…<channel|>`, goes to reasoning. Variants read:
 * `<turn|>` closing a call, `<|tool_call>:call:`, and calls whose open tag was dropped
 * (`<channel|>call:…`, `call:…` at a line start or as the whole output, `<call>NAME{…}`), and
 * plain JSON strings where the `<|"|>` token belongs (`command:"ls"`).
 * Near miss (issue 30): arguments written as a Python call, `<|tool_call>call:NAME(k="v", n=1)`,
 * read when that call is the whole envelope body, it names a declared tool and its arguments
 * fit the schema (repair `parenthesized-arguments`; waybarrios/vllm-mlx
 * tests/test_gemma4_tool_parser.py::TestGemma4ToolParserFallbackForms, Gemma 4 E4B), and Gemma
 * E2B's unfenced tool code filling the output, `tool_code = NAME(k="v")` with an optional
 * `print(tool_code)` line after it (repair `tool-code-assignment`, same gate and source).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';
import { type BodyResult, matchReasoningSection } from '../kit/long-tail.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { type BodyReader, closedEnvelope } from '../kit/envelope.js';
import { expectLiteral, readName, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { parsePythonCallList } from '../kit/python-literal.js';
import { coerceParamValue, createArgs, fitsSchema, paramSchema } from '../kit/schema-values.js';

const OPEN = '<|tool_call>';

const QUOTE = '<|"|>';

/** Reads `call:NAME{…}` calls back to back (whitespace between) from an envelope body. */
export function readDelimitedCalls(body: string, quote: string, ctx: ParseContext): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    // `<|tool_call>:call:…`: a stray colon after the open tag (seen with Gemma 4)
    if (body[i] === ':' && body.startsWith('call:', i + 1)) i++;
    if (!body.startsWith('call:', i)) return { error: 'expected call:NAME' };
    const name = readName(body, i + 5);
    if (name === '') return { error: 'missing tool name' };
    const open = skipWs(body, i + 5 + name.length);
    if (body[open] === '(' && calls.length === 0) return parenthesized(body.slice(i + 5), ctx, true);
    const obj = decodeDelimitedObject(body, open, quote);
    if (!obj) return { error: 'arguments are not readable' };
    // A string where the schema wants a number/boolean/list: type it (the value was quoted
    // anyway); a declared string stays exactly as written.
    const tool = ctx.tools.get(name);
    for (const [k, v] of Object.entries(obj.value)) {
      if (typeof v === 'string') obj.value[k] = coerceParamValue(v, paramSchema(tool, k));
    }
    calls.push({ name, arguments: obj.value });
    i = skipWs(body, obj.end);
  }
  return calls.length > 0 ? { calls } : { error: 'no call in envelope' };
}

/**
 * `NAME(k=v, …)` filling the rest of the body: one call for a declared tool whose schema it fits.
 * In a `<|tool_call>` envelope (`colonPairs`) also `NAME(k: v, …)`, the pairs in Gemma 4's own
 * key syntax (recall17: Gemma 4 31B through the Nous API, NousResearch/hermes-agent#7457).
 */
function parenthesized(rest: string, ctx: ParseContext, colonPairs = false): BodyResult {
  const calls = parsePythonCallList(`[${rest.trimEnd()}]`);
  const c = calls?.length === 1 ? calls[0] : colonPairs ? colonCall(rest, ctx) : undefined;
  const tool = c ? ctx.tools.get(c.name) : undefined;
  if (!c || !tool || !fitsSchema(c.arguments, tool)) return { error: 'arguments are not readable' };
  return { calls: [{ name: c.name, arguments: c.arguments, repairs: ['parenthesized-arguments'] }] };
}

/**
 * `NAME(key: value, …)` as the whole rest of the body, for a declared tool: the pairs read as
 * Gemma 4's braces are (bare or delimited keys, `<|"|>` or JSON strings, numbers, literals,
 * lists, objects), except that a bare word is no string here; anything else is no call.
 */
function colonCall(
  rest: string,
  ctx: ParseContext,
): { name: string; arguments: Record<string, unknown> } | undefined {
  const name = readName(rest, 0);
  const tool = ctx.tools.get(name);
  const open = skipWs(rest, name.length);
  if (!tool || rest[open] !== '(') return undefined;
  const cur: Cursor = { text: rest, quote: QUOTE, pos: open, depth: 0, paren: true };
  const value = readObject(cur);
  if (value === null || skipWs(rest, cur.pos) < rest.length) return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === 'string') value[k] = coerceParamValue(v, paramSchema(tool, k));
  }
  return { name, arguments: value };
}

interface Cursor {
  readonly text: string;
  readonly quote: string;
  pos: number;
  depth: number;
  /** `NAME(k: v, …)`: the outermost pairs sit in parentheses, and a bare word is no value. */
  readonly paren?: boolean;
}

const MAX_DEPTH = 64;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d+)?$/;

/**
 * Decodes `{…}` in the delimited syntax starting at `start`; the object and the index after
 * its `}`, or null. One recursive-descent pass (depth capped): every step consumes input.
 */
export function decodeDelimitedObject(
  text: string,
  start: number,
  quote: string,
): { value: Record<string, unknown>; end: number } | null {
  const cur: Cursor = { text, quote, pos: start, depth: 0 };
  const value = readObject(cur);
  return value === null ? null : { value, end: cur.pos };
}

function ws(cur: Cursor): void {
  cur.pos = skipWs(cur.text, cur.pos);
}

function readQuoted(cur: Cursor): string | null {
  const from = cur.pos + cur.quote.length;
  const to = cur.text.indexOf(cur.quote, from);
  // an unterminated string means the call was cut off
  if (to < 0) return null;
  cur.pos = to + cur.quote.length;
  return cur.text.slice(from, to);
}

function readObject(cur: Cursor): Record<string, unknown> | null {
  // the outermost pairs of `NAME(k: v)` open with `(` and close with `)`
  const [open, close] = cur.paren && cur.depth === 0 ? ['(', ')'] : ['{', '}'];
  if (cur.text[cur.pos] !== open || ++cur.depth > MAX_DEPTH) return null;
  cur.pos++;
  const out = createArgs();
  ws(cur);
  if (cur.text[cur.pos] === close) {
    cur.pos++;
    cur.depth--;
    return out;
  }
  for (;;) {
    ws(cur);
    const key = cur.text.startsWith(cur.quote, cur.pos) ? readQuoted(cur) : readBareKey(cur);
    if (key === null || key === '') return null;
    ws(cur);
    if (cur.text[cur.pos] !== ':') return null;
    cur.pos++;
    ws(cur);
    const quoted = cur.text.startsWith(cur.quote, cur.pos);
    const value = readValue(cur);
    if (value === undefined) return null;
    out[key] = value;
    ws(cur);
    const c = cur.text[cur.pos];
    // FunctionGemma may drop the comma after a delimited string (`a:<escape>x<escape>b:…`):
    // the closing delimiter already ends the value, so the next key starts right there
    if (quoted && c !== ',' && c !== close && c !== undefined) continue;
    cur.pos++;
    if (c === close) {
      cur.depth--;
      return out;
    }
    if (c !== ',') return null;
  }
}

function readBareKey(cur: Cursor): string {
  const from = cur.pos;
  const stops = cur.paren ? ':,{}[]()' : ':,{}[]';
  while (cur.pos < cur.text.length && !stops.includes(cur.text[cur.pos] ?? '')) {
    if (cur.text.startsWith(cur.quote, cur.pos)) break;
    cur.pos++;
  }
  return cur.text.slice(from, cur.pos).trim();
}

function readArray(cur: Cursor): unknown[] | null {
  if (++cur.depth > MAX_DEPTH) return null;
  cur.pos++;
  const out: unknown[] = [];
  ws(cur);
  if (cur.text[cur.pos] === ']') {
    cur.pos++;
    cur.depth--;
    return out;
  }
  for (;;) {
    ws(cur);
    const value = readValue(cur);
    if (value === undefined) return null;
    out.push(value);
    ws(cur);
    const c = cur.text[cur.pos++];
    if (c === ']') {
      cur.depth--;
      return out;
    }
    if (c !== ',') return null;
  }
}

function readJsonString(cur: Cursor): string | undefined {
  const scan = scanJsonValue(cur.text, cur.pos);
  if (!scan || scan.end < 0) return undefined;
  try {
    const v: unknown = JSON.parse(cur.text.slice(cur.pos, scan.end));
    cur.pos = scan.end;
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** undefined = syntax error (null is a value). */
function readValue(cur: Cursor): unknown {
  if (cur.text.startsWith(cur.quote, cur.pos)) return readQuoted(cur) ?? undefined;
  const c = cur.text[cur.pos];
  if (c === '{') return readObject(cur) ?? undefined;
  if (c === '[') return readArray(cur) ?? undefined;
  // a plain JSON string where the delimiter token belongs (`command:"ls"`, the token rendered
  // as a quote by the runtime, jundot/omlx#581): its value, not the quotes
  if (c === '"' && cur.quote !== '"') return readJsonString(cur);
  const from = cur.pos;
  const stops = cur.paren ? ',}])' : ',}]';
  while (cur.pos < cur.text.length && !stops.includes(cur.text[cur.pos] ?? '')) {
    if (cur.text.startsWith(cur.quote, cur.pos)) return undefined;
    cur.pos++;
  }
  // ran off the end: the object never closed
  if (cur.pos >= cur.text.length) return undefined;
  const raw = cur.text.slice(from, cur.pos).trim();
  if (raw === '') return undefined;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  if (NUMBER.test(raw)) return Number(raw);
  // `NAME(k: v)`: a bare word (`'x'`, `x`) is not read as a string there
  if (cur.paren) return undefined;
  // a bare word the model forgot to delimit: the string it reads as
  return raw;
}

const CLOSE = '<tool_call|>';
/** Gemma 4 sometimes ends the call with its end-of-turn token instead. */
const TURN_END = '<turn|>';
const read: BodyReader = (b, ctx) => readDelimitedCalls(b, QUOTE, ctx);
const call = closedEnvelope({ open: OPEN, end: CLOSE, read });
const callToTurnEnd = closedEnvelope({ open: OPEN, end: TURN_END, read });

/** `<|tool_call>…` closed by `<tool_call|>` or, failing that, by `<turn|>` (whichever comes first). */
function canonical(input: MatchInput): MatchResult {
  const from = input.start + input.marker.length;
  const close = input.find(CLOSE, from);
  const turn = input.find(TURN_END, from);
  return turn >= 0 && (close < 0 || turn < close) ? callToTurnEnd(input) : call(input);
}

/**
 * A call without its open tag: `call:NAME{…}` (after `<channel|>`, at a line start, or as the
 * whole output) or the fragmented `<call>NAME{…}` (multimodal prompts split the token). Only
 * read when the arguments decode in the delimited syntax; the envelope ends with them.
 */
function bareCall(text: string, i: number, final: boolean, ctx: ParseContext): MatchResult {
  const name = readName(text, i);
  const k = i + name.length;
  if (k >= text.length) return final ? null : 'need-more';
  if (name === '' || text[k] !== '{') return null;
  const obj = decodeDelimitedObject(text, k, QUOTE);
  if (!obj) {
    if (!final && text.indexOf('}', k) < 0) return 'need-more';
    // the object may still be arriving: decide at the end, or once a `}` that ends it came
    if (!final) return bareUndecided(text, k);
    return null;
  }
  const r = readDelimitedCalls(`call:${text.slice(i, obj.end)}`, QUOTE, ctx);
  if ('error' in r) return null;
  let end = obj.end;
  for (const closer of [CLOSE, TURN_END]) {
    const lit = expectLiteral(text, end, closer, final);
    if (lit === 'need-more') return 'need-more';
    if (lit === 'yes') {
      end += closer.length;
      break;
    }
  }
  return { end, calls: r.calls };
}

/** A delimited object not decodable yet: more text may complete it (it is still open). */
function bareUndecided(text: string, k: number): MatchResult {
  // an object whose braces balance but that does not decode will not decode later either
  let depth = 0;
  let i = k;
  while (i < text.length) {
    if (text.startsWith(QUOTE, i)) {
      const close = text.indexOf(QUOTE, i + QUOTE.length);
      if (close < 0) return 'need-more';
      i = close + QUOTE.length;
      continue;
    }
    const c = text[i];
    if (c === '{' || c === '[') depth++;
    else if ((c === '}' || c === ']') && --depth === 0) return null;
    i++;
  }
  return 'need-more';
}

const CHANNEL_END = '<channel|>';
const FRAGMENT = '<call>';
const LINE_CALL = '\ncall:';

const CHANNEL = '<|channel>';
const THOUGHT = 'thought';

/** `<|channel>thought\n…<channel|>`: Gemma 4's thinking block, to reasoning. */
function thought(input: MatchInput): MatchResult {
  const { text, start, final } = input;
  const lit = expectLiteral(text, start + CHANNEL.length, THOUGHT, final);
  if (lit !== 'yes') return lit === 'need-more' ? 'need-more' : null;
  const m = matchReasoningSection({ ...input, marker: CHANNEL + THOUGHT }, CHANNEL_END);
  if (m === null || m === 'need-more') return m;
  // the channel name is followed by a newline that is not part of the thought
  const r = m.reasoning ?? '';
  return { ...m, reasoning: r.startsWith('\n') ? r.slice(1) : r };
}

/** `<channel|>call:NAME{…}`: the call Gemma 4 writes right after its thought, tag dropped. */
function afterChannel(input: MatchInput): MatchResult {
  const { text, start, marker, final, ctx } = input;
  const i = start + marker.length;
  const lit = expectLiteral(text, i, 'call:', final);
  if (lit !== 'yes') return lit === 'need-more' ? 'need-more' : null;
  return bareCall(text, i + 'call:'.length, final, ctx);
}

function matchGemma(input: MatchInput): MatchResult {
  const { text, start, marker, final, ctx } = input;
  if (marker === CHANNEL) {
    // the thought, and a bare call glued to its end, are one envelope
    const m = thought(input);
    if (m === null || m === 'need-more') return m;
    // what follows the thought decides whether a bare call belongs to this envelope
    if (m.end >= text.length) return final ? m : 'need-more';
    if (!text.startsWith(CHANNEL_END, m.end - CHANNEL_END.length)) return m;
    const c = afterChannel({ ...input, start: m.end - CHANNEL_END.length, marker: CHANNEL_END });
    if (c === 'need-more') return c;
    return c ? { ...c, reasoning: m.reasoning ?? '' } : m;
  }
  if (marker === CHANNEL_END) return afterChannel(input);
  if (marker === FRAGMENT) return bareCall(text, start + marker.length, final, ctx);
  if (marker === LINE_CALL) return bareCall(text, start + marker.length, final, ctx);
  return canonical(input);
}

const TOOL_CODE = 'tool_code = ';

/** `tool_code = NAME(…)` [`\nprint(tool_code)`] as the whole output: one schema-fitting call. */
function toolCodeAssignment(text: string, i: number, ctx: ParseContext): EnvelopeMatch | null {
  const nl = text.indexOf('\n', i);
  const rest = nl < 0 ? '' : text.slice(nl + 1).trim();
  if (rest !== '' && rest !== 'print(tool_code)') return null;
  const r = parenthesized(text.slice(i + TOOL_CODE.length, nl < 0 ? text.length : nl), ctx);
  if ('error' in r) return null;
  return { end: text.length, calls: r.calls.map((c) => ({ ...c, repairs: ['tool-code-assignment'] })) };
}

/** The whole output is bare `call:NAME{…}` (the open tag dropped), or Gemma E2B's tool-code line. */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const i = skipWs(text, 0);
  if (text.startsWith(TOOL_CODE, i)) return toolCodeAssignment(text, i, ctx);
  if (!text.startsWith('call:', i)) return null;
  const m = bareCall(text, i + 'call:'.length, true, ctx);
  if (m === null || m === 'need-more' || skipWs(text, m.end) < text.length) return null;
  return { ...m, end: text.length };
}

export const gemma4 = defineFamily({
  name: 'gemma4',
  markers: [OPEN, CHANNEL, CHANNEL_END, FRAGMENT, LINE_CALL],
  priority: 42,
  backend: { vllm: 'gemma4', llamacpp: 'Gemma 4' },
  match: matchGemma,
  wholeStarts: ['call:', TOOL_CODE],
  matchWhole,
});
