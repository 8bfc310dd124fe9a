/**
 * GigaChat 3 (vLLM `gigachat3`): a tool call is a new "function call" turn inside the assistant
 * message, `<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": …, "arguments": …}`;
 * GigaChat 3.1 writes `<|function_call|>{…}` instead. No end marker: the JSON's end is the end,
 * but an end-of-sequence `</s>` the server failed to strip right after the call belongs to it
 * (vLLM's gigachat3 tests expect it gone), so it goes with the envelope instead of into content.
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter } from '../kit/long-tail.js';
import { peekNonWs } from '../kit/envelope.js';
import { expectLiteral } from '../kit/json-scan.js';

const MSG_SEP = '<|message_sep|>';
const HEADER = 'function call<|role_sep|>';
const V31 = '<|function_call|>';
const EOS = '</s>';

export const gigachat3 = defineFamily({
  name: 'gigachat3',
  markers: [MSG_SEP, V31],
  priority: 42,
  backend: { vllm: 'gigachat3' },
  match(input) {
    if (input.marker === V31) return matchJsonAfter(input, { opens: '{', closer: EOS });
    const j = peekNonWs(input.text, input.start + MSG_SEP.length, input.final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return null;
    const lit = expectLiteral(input.text, j, HEADER, input.final);
    if (lit !== 'yes') return lit === 'need-more' ? 'need-more' : null;
    return matchJsonAfter(input, { opens: '{', closer: EOS, bodyStart: () => j + HEADER.length });
  },
});
