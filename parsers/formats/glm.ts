/**
 * GLM-4.5 / 4.6 / 4.7: <tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>…</tool_call>.
 * Shares <tool_call> with hermes and qwen3-coder: claimed only when a bare name follows.
 * Values are typed by the declared schema; without one, JSON-looking values are decoded (as
 * the GLM template writes non-string values as JSON).
 * IQuest-Coder V2 (vLLM `iquest_coder_v2`) writes the same body in its own call tag, one tag per
 * call: <iquestcoder_tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></iquestcoder_tool_call>.
 */
import { defineFamily } from '../engine/define.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { delimitedEnvelope } from '../kit/envelope.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { coerceParamValue, createArgs, paramSchema } from '../kit/schema-values.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const K_OPEN = '<arg_key>';
const K_CLOSE = '</arg_key>';
const V_OPEN = '<arg_value>';
const V_CLOSE = '</arg_value>';
const IQUEST_OPEN = '<iquestcoder_tool_call>';
const IQUEST_CLOSE = '</iquestcoder_tool_call>';

function accept(text: string, bodyStart: number, final: boolean): 'yes' | 'no' | 'need-more' {
  const j = skipWs(text, bodyStart);
  if (j >= text.length) return final ? 'no' : 'need-more';
  const name = readName(text, j);
  if (name === '') return 'no';
  const after = j + name.length;
  if (after >= text.length) return final ? 'yes' : 'need-more';
  const c = text[after];
  // the template writes NAME then a newline (4.5/4.6) or <arg_key> directly (4.7); prose has a space
  return c === '\n' || c === '\r' || c === '<' ? 'yes' : 'no';
}

function parseBody(body: string, ctx: ParseContext): { calls: ParsedCall[] } | { error: string } {
  let i = skipWs(body, 0);
  const name = readName(body, i);
  if (name === '') return { error: 'no function name' };
  const tool = ctx.tools.get(name);
  i = skipWs(body, i + name.length);
  const args = createArgs();
  while (i < body.length) {
    if (!body.startsWith(K_OPEN, i)) return { error: 'unexpected text in tool call' };
    const kEnd = body.indexOf(K_CLOSE, i + K_OPEN.length);
    if (kEnd < 0) return { error: 'unclosed arg_key' };
    const key = body.slice(i + K_OPEN.length, kEnd).trim();
    i = skipWs(body, kEnd + K_CLOSE.length);
    if (!body.startsWith(V_OPEN, i)) return { error: 'arg_key without arg_value' };
    const vEnd = body.indexOf(V_CLOSE, i + V_OPEN.length);
    if (vEnd < 0) return { error: 'unclosed arg_value' };
    // Two values for one key: which one did the model mean? Leave it as text.
    if (Object.hasOwn(args, key)) return { error: `duplicate argument ${JSON.stringify(key)}` };
    args[key] = coerceParamValue(body.slice(i + V_OPEN.length, vEnd), paramSchema(tool, key), {
      untyped: 'json',
    });
    i = skipWs(body, vEnd + V_CLOSE.length);
  }
  return { calls: [{ name, arguments: args }] };
}

const glmCall = delimitedEnvelope({ end: CLOSE, accept, parseBody: (body, ctx) => parseBody(body, ctx) });
const iquestCall = delimitedEnvelope({
  end: IQUEST_CLOSE,
  accept,
  parseBody: (body, ctx) => parseBody(body, ctx),
});

export const glm = defineFamily({
  name: 'glm',
  markers: [OPEN, IQUEST_OPEN],
  priority: 22,
  backend: { vllm: 'glm45', llamacpp: 'GLM 4.5', sglang: 'glm45' },
  match: (input) => (input.marker === IQUEST_OPEN ? iquestCall(input) : glmCall(input)),
});
