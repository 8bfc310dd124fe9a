/**
 * Meituan LongCat-Flash (vLLM `longcat`): Hermes-style calls under its own tag,
 * `<longcat_tool_call>{"name": …, "arguments": …}</longcat_tool_call>`, one per call.
 */
import { jsonEnvelopeFamily } from '../kit/json-envelope.js';

export const longcat = jsonEnvelopeFamily({
  name: 'longcat',
  open: '<longcat_tool_call>',
  end: '</longcat_tool_call>',
  claims: '{[',
  priority: 42,
  backend: { vllm: 'longcat' },
});
