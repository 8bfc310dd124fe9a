/**
 * Hunyuan-A13B (vLLM `hunyuan_a13b`): `<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>`.
 * AI21 Jamba (vLLM `jamba`) and ServiceNow Apriel write the very same envelope, so this one
 * family covers them (two registry entries for one pattern would only shadow each other).
 * `<tool_calls>` is shared with MiniMax-M1 (objects) and Hunyuan v3 (tags): only an array is ours.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<tool_calls>';

export const hunyuan = defineFamily({
  name: 'hunyuan',
  markers: [OPEN],
  priority: 41,
  backend: { vllm: 'hunyuan_a13b' },
  match: delimitedEnvelope({
    end: '</tool_calls>',
    accept(text, bodyStart, final) {
      const j = peekNonWs(text, bodyStart, final);
      if (j === 'need-more') return 'need-more';
      return j !== 'end' && text[j] === '[' ? 'yes' : 'no';
    },
    parseBody: unlessReopened([OPEN], (body, _ctx, { truncated }) =>
      callsFromJson(body, defaultToCall, truncated),
    ),
  }),
});
