/**
 * MiniMax-M1 (vLLM `minimax`): `<tool_calls>` then one `{"name": …, "arguments": …}` object per
 * line, then `</tool_calls>`. `<tool_calls>` is shared: Hunyuan/Jamba put a JSON array after
 * it and Hunyuan v3 a `<tool_call>` tag, so this family only claims an object.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<tool_calls>';

export const minimax = defineFamily({
  name: 'minimax',
  markers: [OPEN],
  priority: 40,
  backend: { vllm: 'minimax', sglang: 'minimax' },
  match: delimitedEnvelope({
    end: '</tool_calls>',
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
