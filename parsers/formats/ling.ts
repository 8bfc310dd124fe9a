/**
 * inclusionAI Ling 3.0 / Bailing V3 (llama.cpp "Ling 3.0"). Calls are GLM's
 * `<tool_call>NAME<arg_key>…</arg_key><arg_value>…</arg_value></tool_call>` (glm.ts reads them)
 * and reasoning is `<think>…</think>`; this family only removes the end-of-turn token
 * `<|role_end|>` when the model writes it out as text at the end of its answer. Anywhere else
 * it is quoted prose and stays.
 */
import { defineFamily } from '../engine/define.js';
import { trailingControlToken } from '../kit/long-tail.js';

export const ling = defineFamily({
  name: 'ling',
  markers: ['<|role_end|>'],
  priority: 60,
  backend: { llamacpp: 'Ling 3.0' },
  match: trailingControlToken,
});
