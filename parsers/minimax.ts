/**
 * MiniMax-M1 (vLLM `minimax`): `<tool_calls>` then one `{"name": …, "arguments": …}` object per
 * line, then `</tool_calls>`. `<tool_calls>` is shared: Hunyuan/Jamba put a JSON array after
 * it and Hunyuan v3 a `<tool_call>` tag, so this family only claims an object.
 */
import { jsonEnvelopeFamily } from './json-envelope-family.js';

export const minimax = jsonEnvelopeFamily({
  name: 'minimax',
  open: '<tool_calls>',
  end: '</tool_calls>',
  claims: '{',
  priority: 40,
  backend: { vllm: 'minimax', sglang: 'minimax' },
});
