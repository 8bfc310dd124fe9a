/**
 * PLaMo 3 (vLLM `plamo3`). Tags are plain text (several tokens each), one group per turn:
 *   <|plamo:begin_tool_requests:plamo|>
 *   <|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
 *   <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{…}<|plamo:end_tool_arguments:plamo|>
 *   <|plamo:end_tool_request:plamo|>…
 *   <|plamo:end_tool_requests:plamo|><|plamo:tag|>
 * Reasoning is `<|plamo:begin_think:plamo|>…<|plamo:end_think:plamo|>` (the template may open it
 * in the prompt). `<|plamo:tag|>` ends the turn; right after the group it belongs to the envelope. A group cut
 * off at the end of output is read as far as its requests go: a request cut off after its
 * name is a call with `{}`, one cut off in its arguments has them closed (the kit's lenient
 * end-of-output readings); one cut off inside its name leaves the group as text.
 */
import { defineFamily } from '../engine/define.js';
import { delimitedEnvelope, unlessReopened } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import { decodeJsonLenient } from '../kit/lenient-json.js';
import type { BodyResult } from '../kit/long-tail.js';
import type { ParsedCall } from '../types.js';

const GROUP_OPEN = '<|plamo:begin_tool_requests:plamo|>';
const GROUP_CLOSE = '<|plamo:end_tool_requests:plamo|>';
const REQUEST = ['<|plamo:begin_tool_request:plamo|>', '<|plamo:end_tool_request:plamo|>'] as const;
const NAME = ['<|plamo:begin_tool_name:plamo|>', '<|plamo:end_tool_name:plamo|>'] as const;
const ARGS = ['<|plamo:begin_tool_arguments:plamo|>', '<|plamo:end_tool_arguments:plamo|>'] as const;
// the constrained-decoding header the model writes before the JSON
const ARGS_HEADER = '<|plamo:constrain|>json<|plamo:msg|>';
const END_OF_TURN = '<|plamo:tag|>';
const THINK = { open: '<|plamo:begin_think:plamo|>', close: '<|plamo:end_think:plamo|>' };

/** Index after `tag` at `i` (whitespace first), or -1. */
function after(body: string, i: number, tag: string): number {
  const j = skipWs(body, i);
  return body.startsWith(tag, j) ? j + tag.length : -1;
}

function readRequests(body: string, truncated: boolean): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    i = after(body, i, REQUEST[0]);
    if (i < 0) return { error: 'unexpected text between tool requests' };
    i = after(body, i, NAME[0]);
    if (i < 0) return { error: 'tool request without a name' };
    const nameEnd = body.indexOf(NAME[1], i);
    if (nameEnd < 0) return { error: 'tool name not closed' };
    const name = body.slice(i, nameEnd).trim();
    i = skipWs(body, nameEnd + NAME[1].length);
    if (i === body.length && truncated) {
      calls.push({ name, arguments: {}, repairs: ['missing-arguments'] });
      break;
    }
    i = after(body, i, ARGS[0]);
    if (i < 0) return { error: 'tool request without arguments' };
    if (body.startsWith(ARGS_HEADER, i)) i += ARGS_HEADER.length;
    let argsEnd = body.indexOf(ARGS[1], i);
    if (argsEnd < 0 && !truncated) return { error: 'tool arguments not closed' };
    if (argsEnd < 0) argsEnd = body.length;
    const args = decodeJsonLenient(body.slice(i, argsEnd), { allowMissingClose: argsEnd === body.length });
    if (!args) return { error: 'tool arguments are not JSON' };
    // a value that is not an object is kept: the safety rules reject the call by name
    calls.push({
      name,
      arguments: args.value,
      ...(args.repairs.length > 0 ? { repairs: args.repairs } : {}),
    });
    i = argsEnd === body.length ? argsEnd : argsEnd + ARGS[1].length;
    const closed = after(body, i, REQUEST[1]);
    if (closed >= 0) i = skipWs(body, closed);
    else if (!truncated || skipWs(body, i) < body.length) return { error: 'tool request not closed' };
    else break;
  }
  return calls.length > 0 ? { calls } : { error: 'no tool request in the group' };
}

export const plamo3 = defineFamily({
  name: 'plamo3',
  markers: [GROUP_OPEN],
  reasoning: [THINK],
  priority: 42,
  backend: { vllm: 'plamo3' },
  match: delimitedEnvelope({
    end: GROUP_CLOSE,
    trailer: END_OF_TURN,
    parseBody: unlessReopened([GROUP_OPEN], (body, _ctx, info) => readRequests(body, info.truncated)),
  }),
});
