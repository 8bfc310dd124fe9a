/**
 * MiniMax-M1 (vLLM `minimax`): `<tool_calls>` then one `{"name": …, "arguments": …}` object per
 * line, then `</tool_calls>`. `<tool_calls>` is shared: Hunyuan/Jamba put a JSON array after
 * it and Hunyuan v3 a `<tool_call>` tag, so this family only claims an object, or MiniMax-M2's
 * `<invoke name="…">` XML (M2-style calls in the M1 block, seen when the template is mixed up).
 * Like vLLM's reader, a line that is not a call object is skipped when other lines are calls
 * (repair `skipped-line`); a block with no readable call stays text.
 */
import { defineFamily } from '../engine/define.js';
import { type BodyResult, callsFromJson, defaultToCall, readXmlCalls } from '../kit/long-tail.js';
import { MINIMAX_INVOKE } from './minimax-m2.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { closedEnvelope, peekNonWs, startsWith } from '../kit/envelope.js';
import { pushAll } from '../../protocol/append-all.js';

const OPEN = '<tool_calls>';
const INVOKE = '<invoke';

function lineByLine(body: string): BodyResult {
  const calls: ParsedCall[] = [];
  let skipped = false;
  for (const line of body.split('\n')) {
    const t = line.trim();
    if (t === '') continue;
    // a line is a call only when complete: a name AND its arguments (as vLLM filters them)
    const r =
      t.startsWith('{') && /"(arguments|parameters)"\s*:/.test(t)
        ? callsFromJson(t, defaultToCall, false)
        : { error: 'not a complete call line' };
    if ('error' in r) skipped = true;
    else pushAll(calls, r.calls);
  }
  if (calls.length === 0) return { error: 'no call object in block' };
  if (!skipped) return { calls };
  return { calls: calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'skipped-line'] })) };
}

function parseBody(body: string, ctx: ParseContext, truncated: boolean): BodyResult {
  const j = peekNonWs(body, 0, true);
  if (typeof j === 'number' && body.startsWith(INVOKE, j)) return readXmlCalls(body, MINIMAX_INVOKE, ctx);
  const whole = callsFromJson(body, defaultToCall, truncated);
  return 'error' in whole && !truncated ? lineByLine(body) : whole;
}

export const minimax = defineFamily({
  name: 'minimax',
  markers: [OPEN],
  priority: 40,
  backend: { vllm: 'minimax', sglang: 'minimax' },
  match: closedEnvelope({
    open: OPEN,
    end: '</tool_calls>',
    accept: startsWith('{', INVOKE),
    read: (body, ctx, { truncated }) => parseBody(body, ctx, truncated),
  }),
});
