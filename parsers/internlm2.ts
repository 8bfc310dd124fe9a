/**
 * InternLM2 / InternLM2.5 / Intern-S1 (vLLM `internlm`):
 *   text<|action_start|><|plugin|>\n{"name": …, "parameters": {…}}<|action_end|>
 * One JSON call object per action block.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<|action_start|><|plugin|>';

export const internlm2 = defineFamily({
  name: 'internlm2',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'internlm' },
  match: delimitedEnvelope({
    end: '<|action_end|>',
    accept(text, bodyStart, final) {
      const j = peekNonWs(text, bodyStart, final);
      if (j === 'need-more') return 'need-more';
      return j !== 'end' && text[j] === '{' ? 'yes' : 'no';
    },
    parseBody: unlessReopened([OPEN], (body, _ctx, { truncated }) =>
      callsFromJson(body, defaultToCall, truncated),
    ),
  }),
});
