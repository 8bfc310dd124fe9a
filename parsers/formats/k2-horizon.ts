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
import type { ParseContext } from '../types.js';
import { callFromObject, delimitedEnvelope } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import {
  type KeyValueBody,
  type KeyValueSpec,
  readKeyValueBlock,
  readKeyValueCall,
} from '../kit/key-value-calls.js';
import { callsFromJson, matchReasoningSection } from '../kit/long-tail.js';
import { typeStringScalars } from '../kit/schema-values.js';

const GROUP_OPEN = '<ifm|tool_calls>';
const GROUP_CLOSE = '</ifm|tool_calls>';
const CALL_OPEN = '<ifm|tool_call>';
const CALL_CLOSE = '</ifm|tool_call>';
const THINKS: Readonly<Record<string, string>> = {
  '<ifm|think>': '</ifm|think>',
  '<ifm|think_fast>': '</ifm|think_fast>',
  '<ifm|think_faster>': '</ifm|think_faster>',
};

const SPEC: KeyValueSpec = {
  call: [CALL_OPEN, CALL_CLOSE],
  key: ['<ifm|arg_key>', '</ifm|arg_key>'],
  type: ['<ifm|arg_type>', '</ifm|arg_type>'],
  value: ['<ifm|arg_value>', '</ifm|arg_value>'],
  untyped: 'json',
};

/** One call body: JSON (an object or a list) or the key/value layout. */
function readCallBody(body: string, ctx: ParseContext): KeyValueBody {
  const j = skipWs(body, 0);
  if (body[j] !== '{' && body[j] !== '[') return readKeyValueCall(body, ctx, SPEC);
  const r = callsFromJson(body, callFromObject, false);
  if ('error' in r) return r;
  // the JSON dialect writes numbers and booleans as strings too ({"limit": "2"}): typed here
  return {
    calls: r.calls.map((c) => ({ ...c, arguments: typeStringScalars(c.arguments, ctx.tools.get(c.name)) })),
  };
}

const group = delimitedEnvelope({
  end: GROUP_CLOSE,
  parseBody: (b, ctx) => readKeyValueBlock(b, ctx, SPEC, readCallBody),
});
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
