/**
 * Meituan LongCat-Flash (vLLM `longcat`): Hermes-style calls under its own tag,
 * `<longcat_tool_call>{"name": …, "arguments": …}</longcat_tool_call>`, one per call.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<longcat_tool_call>';

export const longcat = defineFamily({
  name: 'longcat',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'longcat' },
  match: delimitedEnvelope({
    end: '</longcat_tool_call>',
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
