/**
 * Gemma 4 (vLLM `gemma4`): `<|tool_call>call:NAME{key:value,…}<tool_call|>`, one call per
 * envelope. Its argument syntax is not JSON: keys are bare, strings are wrapped in the `<|"|>`
 * token instead of quotes (so they need no escaping), and numbers, booleans, null, lists and
 * nested objects are bare. FunctionGemma uses the same syntax with `<escape>` (function-gemma.ts).
 * A leaked thinking block, `<|channel>thought\n…<channel|>`, goes to reasoning.
 */
import { defineFamily } from './define.js';
import type { MatchInput, MatchResult } from './family.js';
import { type BodyResult, matchReasoningSection, unlessReopened } from './long-tail-kit.js';
import type { ParseContext, ParsedCall } from './types.js';
import { delimitedEnvelope } from './util/envelope.js';
import { expectLiteral, readName, skipWs } from './util/json-scan.js';
import { coerceParamValue, createArgs, paramSchema } from './util/schema-values.js';

const OPEN = '<|tool_call>';

const QUOTE = '<|"|>';

/** Reads `call:NAME{…}` calls back to back (whitespace between) from an envelope body. */
export function readDelimitedCalls(body: string, quote: string, ctx: ParseContext): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    if (!body.startsWith('call:', i)) return { error: 'expected call:NAME' };
    const name = readName(body, i + 5);
    if (name === '') return { error: 'missing tool name' };
    const open = skipWs(body, i + 5 + name.length);
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

interface Cursor {
  readonly text: string;
  readonly quote: string;
  pos: number;
  depth: number;
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
  if (cur.text[cur.pos] !== '{' || ++cur.depth > MAX_DEPTH) return null;
  cur.pos++;
  const out = createArgs();
  ws(cur);
  if (cur.text[cur.pos] === '}') {
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
    const value = readValue(cur);
    if (value === undefined) return null;
    out[key] = value;
    ws(cur);
    const c = cur.text[cur.pos++];
    if (c === '}') {
      cur.depth--;
      return out;
    }
    if (c !== ',') return null;
  }
}

function readBareKey(cur: Cursor): string {
  const from = cur.pos;
  while (cur.pos < cur.text.length && !':,{}[]'.includes(cur.text[cur.pos] ?? '')) {
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

/** undefined = syntax error (null is a value). */
function readValue(cur: Cursor): unknown {
  if (cur.text.startsWith(cur.quote, cur.pos)) return readQuoted(cur) ?? undefined;
  const c = cur.text[cur.pos];
  if (c === '{') return readObject(cur) ?? undefined;
  if (c === '[') return readArray(cur) ?? undefined;
  const from = cur.pos;
  while (cur.pos < cur.text.length && !',}]'.includes(cur.text[cur.pos] ?? '')) {
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
  // a bare word the model forgot to delimit: the string it reads as
  return raw;
}

const call = delimitedEnvelope({
  end: '<tool_call|>',
  parseBody: unlessReopened([OPEN], (body, ctx) => readDelimitedCalls(body, QUOTE, ctx)),
});

const CHANNEL = '<|channel>';
const THOUGHT = 'thought';

/** `<|channel>thought\n…<channel|>`: Gemma 4's thinking block, to reasoning. */
function thought(input: MatchInput): MatchResult {
  const { text, start, final } = input;
  const lit = expectLiteral(text, start + CHANNEL.length, THOUGHT, final);
  if (lit !== 'yes') return lit === 'need-more' ? 'need-more' : null;
  const m = matchReasoningSection({ ...input, marker: CHANNEL + THOUGHT }, '<channel|>');
  if (m === null || m === 'need-more') return m;
  // the channel name is followed by a newline that is not part of the thought
  const r = m.reasoning ?? '';
  return { ...m, reasoning: r.startsWith('\n') ? r.slice(1) : r };
}

export const gemma4 = defineFamily({
  name: 'gemma4',
  markers: [OPEN, CHANNEL],
  priority: 42,
  backend: { vllm: 'gemma4', llamacpp: 'Gemma 4' },
  match: (input) => (input.marker === CHANNEL ? thought(input) : call(input)),
});
