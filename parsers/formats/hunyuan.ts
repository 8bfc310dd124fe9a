/**
 * Hunyuan-A13B (vLLM `hunyuan_a13b`): `<tool_calls>[{"name": …, "arguments": …}, …]</tool_calls>`.
 * AI21 Jamba (vLLM `jamba`) and ServiceNow Apriel write the very same envelope, so this one
 * family covers them (two registry entries for one pattern would only shadow each other).
 * `<tool_calls>` is shared with MiniMax-M1 (objects) and Hunyuan v3 (tags): only an array is ours.
 */
import { jsonEnvelopeFamily } from '../kit/json-envelope.js';

export const hunyuan = jsonEnvelopeFamily({
  name: 'hunyuan',
  open: '<tool_calls>',
  end: '</tool_calls>',
  claims: '[',
  priority: 41,
  backend: { vllm: 'hunyuan_a13b' },
});
