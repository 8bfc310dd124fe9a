/**
 * K2-Horizon / K2 V3 IFM tags (vLLM `k2_horizon`, SGLang `k2_v3`):
 *   <ifm|think>…</ifm|think>   (also `think_fast`, `think_faster`: reasoning effort levels)
 *   <ifm|tool_calls>
 *   <ifm|tool_call>NAME<ifm|arg_key>K</ifm|arg_key>[<ifm|arg_type>T</ifm|arg_type>]<ifm|arg_value>V</ifm|arg_value>…</ifm|tool_call>
 *   </ifm|tool_calls>
 * A call body may instead hold JSON (`{"name": …, "arguments": …}` or a list of them): the
 * peers pick the dialect per request (`tool_call_format`), toolproof reads both. Values are
 * typed by the declared schema, else by the inline `arg_type`, else JSON-looking text is
 * decoded (as GLM's, whose layout this is). A lone call must be closed; a group cut off at the
 * end of output is read when every call in it is closed.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { callFromObject, delimitedEnvelope } from '../kit/envelope.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { callsFromJson, matchReasoningSection } from '../kit/long-tail.js';
import { coerceParamValue, createArgs, paramSchema, typeStringScalars } from '../kit/schema-values.js';

const GROUP_OPEN = '<ifm|tool_calls>';
const GROUP_CLOSE = '</ifm|tool_calls>';
const CALL_OPEN = '<ifm|tool_call>';
const CALL_CLOSE = '</ifm|tool_call>';
const KEY = ['<ifm|arg_key>', '</ifm|arg_key>'] as const;
const TYPE = ['<ifm|arg_type>', '</ifm|arg_type>'] as const;
const VALUE = ['<ifm|arg_value>', '</ifm|arg_value>'] as const;
const THINKS: Readonly<Record<string, string>> = {
  '<ifm|think>': '</ifm|think>',
  '<ifm|think_fast>': '</ifm|think_fast>',
  '<ifm|think_faster>': '</ifm|think_faster>',
};

type Body = { calls: ParsedCall[] } | { error: string };

/** `OPEN text CLOSE` at i (after whitespace): the text and where it ends, or null. */
function tagged(body: string, i: number, [open, close]: readonly [string, string]) {
  const j = skipWs(body, i);
  if (!body.startsWith(open, j)) return null;
  const end = body.indexOf(close, j + open.length);
  return end < 0 ? null : { text: body.slice(j + open.length, end), next: end + close.length };
}

/** `NAME` then key / optional type / value triples. */
function readXmlCall(body: string, ctx: ParseContext): Body {
  let i = skipWs(body, 0);
  const name = readName(body, i);
  if (name === '') return { error: 'no function name' };
  const tool = ctx.tools.get(name);
  i = skipWs(body, i + name.length);
  const args = createArgs();
  while (i < body.length) {
    const key = tagged(body, i, KEY);
    if (!key) return { error: 'unexpected text in tool call' };
    const type = tagged(body, key.next, TYPE);
    const value = tagged(body, type ? type.next : key.next, VALUE);
    if (!value) return { error: 'arg_key without arg_value' };
    const k = key.text.trim();
    // Two values for one key: which one did the model mean? Leave it as text.
    if (k === '' || Object.hasOwn(args, k)) return { error: 'bad or repeated argument name' };
    const schema = paramSchema(tool, k) ?? (type ? { type: type.text.trim() } : undefined);
    args[k] = coerceParamValue(value.text, schema, { untyped: 'json' });
    i = skipWs(body, value.next);
  }
  return { calls: [{ name, arguments: args }] };
}

/** One call body: JSON (an object or a list) or the XML-ish layout. */
function readCallBody(body: string, ctx: ParseContext): Body {
  const j = skipWs(body, 0);
  if (body[j] !== '{' && body[j] !== '[') return readXmlCall(body, ctx);
  const r = callsFromJson(body, callFromObject, false);
  if ('error' in r) return r;
  // the JSON dialect writes numbers and booleans as strings too ({"limit": "2"}): typed here
  return {
    calls: r.calls.map((c) => ({ ...c, arguments: typeStringScalars(c.arguments, ctx.tools.get(c.name)) })),
  };
}

/** A group's body: closed calls separated by whitespace, nothing else. */
function readGroup(body: string, ctx: ParseContext): Body {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    const call = tagged(body, i, [CALL_OPEN, CALL_CLOSE]);
    if (!call) return { error: 'unexpected text in tool_calls group' };
    const r = readCallBody(call.text, ctx);
    if ('error' in r) return r;
    calls.push(...r.calls);
    i = skipWs(body, call.next);
  }
  return calls.length > 0 ? { calls } : { error: 'empty tool_calls group' };
}

const group = delimitedEnvelope({ end: GROUP_CLOSE, parseBody: (b, ctx) => readGroup(b, ctx) });
const lone = delimitedEnvelope({
  end: CALL_CLOSE,
  allowUnclosed: false,
  parseBody: (b, ctx) => readCallBody(b, ctx),
});

export const k2Horizon = defineFamily({
  name: 'k2-horizon',
  markers: [GROUP_OPEN, CALL_OPEN, ...Object.keys(THINKS)],
  priority: 43,
  backend: { vllm: 'k2_horizon', sglang: 'k2_v3' },
  match(input): MatchResult {
    const close = THINKS[input.marker];
    if (close !== undefined) return matchReasoningSection(input, close);
    return input.marker === GROUP_OPEN ? group(input) : lone(input);
  },
});
