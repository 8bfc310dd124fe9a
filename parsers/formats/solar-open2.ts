/**
 * Solar Open 2 (vLLM `solar_open2`): one sentinel-delimited block per call, no group around them:
 *   <|tool_call:start|>NAME\n<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>\n…<|tool_call:end|>
 * The name is the rest of the start line; values are raw text typed by the declared schema.
 * Reasoning is `<|think:start|>…<|think:end|>`.
 *
 * Dropped sentinels read as vLLM reads them, since each leaves the call unambiguous: a call
 * ended by the next `<|tool_call:start|>` instead of its end (`missing-close-tag`), a value
 * ended by the call's end instead of its own, and an argument whose name runs into the next
 * argument or the call's end is skipped (`skipped-line`). A call the end of output cut off,
 * or whose name line never ends before a sentinel, stays text.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { skipWs } from '../kit/json-scan.js';
import { coerceParamValue, createArgs, paramSchema } from '../kit/schema-values.js';
import type { ParseContext, ParsedCall } from '../types.js';

const M = {
  callStart: '<|tool_call:start|>',
  callEnd: '<|tool_call:end|>',
  argStart: '<|tool_arg:start|>',
  argValue: '<|tool_arg:value|>',
  argEnd: '<|tool_arg:end|>',
  thinkStart: '<|think:start|>',
  thinkEnd: '<|think:end|>',
} as const;

/** One call's body (between the start sentinel and where the call ends). */
function readCall(body: string, ctx: ParseContext, repairs: string[]): ParsedCall | { error: string } {
  const nl = body.indexOf('\n');
  if (nl < 0) return { error: 'call name line not ended' };
  const name = body.slice(0, nl).trim();
  if (name.includes('<|')) return { error: 'call name line not ended' };
  if (name === '') return { error: 'no function name' };
  const tool = ctx.tools.get(name);
  const args = createArgs();
  // positions of the next sentinels, searched again only once passed (one pass over the body)
  let nextValue = -1;
  let nextArg = -1;
  let i = nl + 1;
  for (;;) {
    i = skipWs(body, i);
    if (i >= body.length) break;
    if (!body.startsWith(M.argStart, i)) return { error: 'unexpected text in tool call' };
    const keyAt = i + M.argStart.length;
    if (nextValue < keyAt) nextValue = body.indexOf(M.argValue, keyAt);
    if (nextValue < 0) nextValue = body.length;
    if (nextArg < keyAt) nextArg = body.indexOf(M.argStart, keyAt);
    if (nextArg < 0) nextArg = body.length;
    if (nextArg < nextValue || nextValue === body.length) {
      // the name ran into another argument or the call's end: no key for it
      if (!repairs.includes('skipped-line')) repairs.push('skipped-line');
      i = nextArg;
      continue;
    }
    const key = body.slice(keyAt, nextValue).trim();
    const valueAt = nextValue + M.argValue.length;
    let valueEnd = body.indexOf(M.argEnd, valueAt);
    let next: number;
    if (valueEnd < 0) {
      valueEnd = body.length;
      next = body.length;
      if (!repairs.includes('missing-close-tag')) repairs.push('missing-close-tag');
    } else next = valueEnd + M.argEnd.length;
    // Two values for one key: which one did the model mean? Leave it as text.
    if (key === '' || Object.hasOwn(args, key)) return { error: 'bad or repeated argument name' };
    args[key] = coerceParamValue(body.slice(valueAt, valueEnd), paramSchema(tool, key), {
      untyped: 'string',
    });
    i = next;
  }
  return { name, arguments: args, ...(repairs.length > 0 ? { repairs } : {}) };
}

function matchCall({ text, start, final, ctx, find }: MatchInput): MatchResult {
  const bodyStart = start + M.callStart.length;
  const end = find(M.callEnd, bodyStart);
  const restart = find(M.callStart, bodyStart);
  if (end < 0 && restart < 0) {
    if (!final) return 'need-more';
    return { end: text.length, calls: [], error: 'tool call cut off', truncated: true };
  }
  const repairs: string[] = [];
  const closed = end >= 0 && (restart < 0 || end < restart);
  // a dropped end sentinel: the next call's start ends this one (and is left for it)
  if (!closed) repairs.push('missing-close-tag');
  const bodyEnd = closed ? end : restart;
  const r = readCall(text.slice(bodyStart, bodyEnd), ctx, repairs);
  const matchEnd = closed ? end + M.callEnd.length : restart;
  return 'error' in r ? { end: matchEnd, calls: [], error: r.error } : { end: matchEnd, calls: [r] };
}

export const solarOpen2 = defineFamily({
  name: 'solar-open2',
  markers: [M.callStart],
  reasoning: [{ open: M.thinkStart, close: M.thinkEnd }],
  priority: 42,
  backend: { vllm: 'solar_open2' },
  match: matchCall,
});
