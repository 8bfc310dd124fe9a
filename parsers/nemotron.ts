/**
 * NVIDIA Nemotron (Llama-Nemotron / Nemotron-Nano v2, vLLM `nemotron_json` / `llama_nemotron_json`):
 * `<TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>`.
 */
import { defineFamily } from './define.js';
import { callsFromJson, defaultToCall, unlessReopened } from './long-tail-kit.js';
import { delimitedEnvelope, peekNonWs } from './util/envelope.js';

const OPEN = '<TOOLCALL>';

export const nemotron = defineFamily({
  name: 'nemotron',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'nemotron_json' },
  match: delimitedEnvelope({
    end: '</TOOLCALL>',
    accept(text, bodyStart, final) {
      const j = peekNonWs(text, bodyStart, final);
      if (j === 'need-more') return 'need-more';
      return j !== 'end' && (text[j] === '[' || text[j] === '{') ? 'yes' : 'no';
    },
    parseBody: unlessReopened([OPEN], (body, _ctx, { truncated }) =>
      callsFromJson(body, defaultToCall, truncated),
    ),
  }),
});
