/**
 * Qwen2.5-Coder (vLLM `qwen25_coder`): its template shows tools inside `<tools>`, and the model
 * often answers in kind: `<tools>{"name": …, "arguments": …}</tools>` (or an array, or several
 * blocks). `<tools>` also appears in prose about prompts, so only a JSON body is claimed.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<tools>';

export const qwen25Coder = defineFamily({
  name: 'qwen25-coder',
  markers: [OPEN],
  priority: 45,
  backend: { vllm: 'qwen25_coder' },
  match: delimitedEnvelope({
    end: '</tools>',
    accept(text, bodyStart, final) {
      const j = peekNonWs(text, bodyStart, final);
      if (j === 'need-more') return 'need-more';
      return j !== 'end' && (text[j] === '{' || text[j] === '[') ? 'yes' : 'no';
    },
    parseBody: unlessReopened([OPEN], (body, _ctx, { truncated }) =>
      callsFromJson(body, defaultToCall, truncated),
    ),
  }),
});
