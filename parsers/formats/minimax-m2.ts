/**
 * MiniMax-M2 (vLLM `minimax_m2`):
 *   <minimax:tool_call>
 *   <invoke name="NAME"><parameter name="P">value</parameter>…</invoke>…
 *   </minimax:tool_call>
 * Values are raw text typed by the declared schema; a declared string stays byte for byte
 * (whitespace included: edit tools compare it exactly).
 */
import { defineFamily } from '../engine/define.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { closedEnvelope } from '../kit/envelope.js';

const OPEN = '<minimax:tool_call>';

export const MINIMAX_INVOKE: XmlCallSpec = {
  callOpen: '<invoke name="',
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</invoke>',
  argOpen: '<parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</parameter>',
};

export const minimaxM2 = defineFamily({
  name: 'minimax-m2',
  markers: [OPEN],
  priority: 40,
  backend: { vllm: 'minimax_m2', llamacpp: 'MiniMax-M2', sglang: 'minimax-m2' },
  match: closedEnvelope({
    open: OPEN,
    end: '</minimax:tool_call>',
    read: (body, ctx) => readXmlCalls(body, MINIMAX_INVOKE, ctx),
  }),
});
