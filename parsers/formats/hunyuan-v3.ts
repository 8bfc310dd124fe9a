/**
 * Hunyuan v3 / Hy3 (vLLM `hy_v3`): GLM-style key/value tags inside `<tool_calls>`:
 *   <tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>…</tool_calls>
 * Values are raw text typed by the declared schema. `<tool_calls>` is shared with MiniMax-M1
 * and Hunyuan-A13B: this family only claims it when a `<tool_call>` tag follows.
 */
import { defineFamily } from '../engine/define.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { closedEnvelope, startsWith } from '../kit/envelope.js';

const OPEN = '<tool_calls>';

const CALLS: XmlCallSpec = {
  callOpen: '<tool_call>',
  callNameEnd: '<tool_sep>',
  callHeadEnd: '',
  callClose: '</tool_call>',
  argOpen: '<arg_key>',
  argNameEnd: '</arg_key>',
  argHeadEnd: '<arg_value>',
  argClose: '</arg_value>',
};

export const hunyuanV3 = defineFamily({
  name: 'hunyuan-v3',
  markers: [OPEN],
  priority: 41,
  backend: { vllm: 'hy_v3' },
  match: closedEnvelope({
    open: OPEN,
    end: '</tool_calls>',
    accept: startsWith('<tool_call>'),
    read: (body, ctx) => readXmlCalls(body, CALLS, ctx),
  }),
});
