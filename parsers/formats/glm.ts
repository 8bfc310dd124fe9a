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
import { coerceParamValue, createArgs, fitsSchema, paramSchema } from '../kit/schema-values.js';

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

/**
 * Next index of `lit` at or after `from`, each literal searched forward only (a miss is
 * remembered), so a body is read in one pass whatever its number of keys.
 */
function seeker(body: string) {
  const at = new Map<string, number>();
  return (lit: string, from: number): number => {
    const prev = at.get(lit);
    if (prev !== undefined && (prev < 0 || prev >= from)) return prev;
    const next = body.indexOf(lit, from);
    at.set(lit, next);
    return next;
  };
}

function parseBody(
  body: string,
  ctx: ParseContext,
  truncated = false,
): { calls: ParsedCall[] } | { error: string } {
  let i = skipWs(body, 0);
  const name = readName(body, i);
  if (name === '') return { error: 'no function name' };
  const tool = ctx.tools.get(name);
  i = skipWs(body, i + name.length);
  const args = createArgs();
  const next = seeker(body);
  const repairs = new Set<string>();
  while (i < body.length) {
    if (!body.startsWith(K_OPEN, i)) return { error: 'unexpected text in tool call' };
    const kEnd = next(K_CLOSE, i + K_OPEN.length);
    if (kEnd < 0) return { error: 'unclosed arg_key' };
    const key = body.slice(i + K_OPEN.length, kEnd).trim();
    i = skipWs(body, kEnd + K_CLOSE.length);
    // Two values for one key: which one did the model mean? Leave it as text.
    if (Object.hasOwn(args, key)) return { error: `duplicate argument ${JSON.stringify(key)}` };
    const opened = body.startsWith(V_OPEN, i);
    const from = opened ? i + V_OPEN.length : i;
    const vEnd = next(V_CLOSE, from);
    const nextKey = next(K_OPEN, from);
    // Near misses (issue 30; ollama/ollama model/parsers/glm46_test.go): a value whose
    // `<arg_value>` or `</arg_value>` the model dropped ends where the next key or the call
    // begins. Read only when the call then fits the declared tool's schema (below).
    const closed = vEnd >= 0 && (nextKey < 0 || vEnd < nextKey);
    if (!opened) {
      if (!closed) return { error: 'arg_key without arg_value' };
      repairs.add('missing-arg-value-open');
    } else if (!closed) {
      // a value the end of output cut off is not a value the model finished
      if (nextKey < 0 && truncated) return { error: 'unclosed arg_value' };
      repairs.add('missing-arg-value-close');
    }
    const end = closed ? vEnd : nextKey >= 0 ? nextKey : body.length;
    const raw = body.slice(from, end);
    args[key] = coerceParamValue(opened && closed ? raw : raw.trim(), paramSchema(tool, key), {
      untyped: 'json',
    });
    i = skipWs(body, closed ? vEnd + V_CLOSE.length : end);
  }
  if (repairs.size === 0) return { calls: [{ name, arguments: args }] };
  if (!tool || !fitsSchema(args, tool)) return { error: 'arg_value tags broken' };
  return { calls: [{ name, arguments: args, repairs: [...repairs] }] };
}

const glmCall = delimitedEnvelope({
  end: CLOSE,
  accept,
  parseBody: (body, ctx, info) => parseBody(body, ctx, info.truncated),
});
const iquestCall = delimitedEnvelope({
  end: IQUEST_CLOSE,
  accept,
  parseBody: (body, ctx, info) => parseBody(body, ctx, info.truncated),
});

export const glm = defineFamily({
  name: 'glm',
  markers: [OPEN, IQUEST_OPEN],
  priority: 22,
  backend: { vllm: 'glm45', llamacpp: 'GLM 4.5', sglang: 'glm45' },
  match: (input) => (input.marker === IQUEST_OPEN ? iquestCall(input) : glmCall(input)),
});
