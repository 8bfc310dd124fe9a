/**
 * Cohere Command R7B / Command A (llama.cpp "Command R7B", vLLM `cohere_command`):
 *   <|START_THINKING|>plan<|END_THINKING|>
 *   <|START_ACTION|>[{"tool_call_id": "0", "tool_name": "NAME", "parameters": {…}}, …]<|END_ACTION|>
 * or <|START_RESPONSE|>text<|END_RESPONSE|> for an answer (Cohere2 MoE: <|START_TEXT|>…<|END_TEXT|>).
 * Thinking goes to reasoning, the response markers are control tokens (removed, their text stays
 * content). Cohere2 MoE's template opens <|START_THINKING|> in the prompt (startsInReasoning):
 * the output then begins inside the thinking, and starting with a response or action marker
 * means it skipped it. The format's ids are "0", "1", … in every turn, so fresh ids are issued
 * instead (they would collide in history).
 */
import { defineFamily } from '../engine/define.js';
import { callsFromJson, controlToken, matchReasoningSection, type ToCall } from '../kit/long-tail.js';
import { closedEnvelope, startsWith } from '../kit/envelope.js';
import { isPlainObject } from '../kit/lenient-json.js';

const THINK = '<|START_THINKING|>';
const ACTION = '<|START_ACTION|>';
const END_THINKING = '<|END_THINKING|>';
const ANSWERS = ['<|START_RESPONSE|>', '<|START_TEXT|>'];
const CONTROL = [...ANSWERS, '<|END_RESPONSE|>', '<|END_TEXT|>', '<|END_OF_TURN_TOKEN|>'];

/** One Cohere call object: `tool_name` and `parameters` (R7B adds `tool_call_id`), nothing else. */
export const cohereToCall: ToCall = (v) => {
  if (!isPlainObject(v) || typeof v.tool_name !== 'string' || v.tool_name === '') return null;
  for (const k of Object.keys(v))
    if (k !== 'tool_call_id' && k !== 'tool_name' && k !== 'parameters') return null;
  return { name: v.tool_name, arguments: v.parameters };
};

const action = closedEnvelope({
  open: ACTION,
  end: '<|END_ACTION|>',
  accept: startsWith('[', '{'),
  read: (body, _ctx, { truncated }) => callsFromJson(body, cohereToCall, truncated),
});

export const commandR7b = defineFamily({
  name: 'command-r7b',
  markers: [THINK, ACTION, ...CONTROL],
  priority: 42,
  backend: { vllm: 'cohere_command', llamacpp: 'Command R7B' },
  reasoning: [{ open: THINK, close: END_THINKING, skippedBy: [...ANSWERS, ACTION] }],
  match(input) {
    // a section opened after other text (a leading one is the think splitter's)
    if (input.marker === THINK) return matchReasoningSection(input, END_THINKING);
    if (input.marker === ACTION) return action(input);
    return controlToken(input.start, input.marker);
  },
});
