/**
 * Qwen2.5-Coder (vLLM `qwen25_coder`): its template shows tools inside `<tools>`, and the model
 * often answers in kind: `<tools>{"name": …, "arguments": …}</tools>` (or an array, or several
 * blocks). `<tools>` also appears in prose about prompts, so only a JSON body is claimed.
 */
import { jsonEnvelopeFamily } from '../kit/json-envelope.js';

export const qwen25Coder = jsonEnvelopeFamily({
  name: 'qwen25-coder',
  open: '<tools>',
  end: '</tools>',
  claims: '{[',
  priority: 45,
  backend: { vllm: 'qwen25_coder' },
});
