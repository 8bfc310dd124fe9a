/**
 * InternLM2 / InternLM2.5 / Intern-S1 (vLLM `internlm`):
 *   text<|action_start|><|plugin|>\n{"name": …, "parameters": {…}}<|action_end|>
 * One JSON call object per action block.
 */
import { jsonEnvelopeFamily } from '../kit/json-envelope.js';

export const internlm2 = jsonEnvelopeFamily({
  name: 'internlm2',
  open: '<|action_start|><|plugin|>',
  end: '<|action_end|>',
  claims: '{',
  priority: 42,
  backend: { vllm: 'internlm' },
});
