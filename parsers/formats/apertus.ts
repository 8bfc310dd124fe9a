/**
 * Swiss AI Apertus (vLLM `apertus`): `<|tools_prefix|>[{"NAME": {args}}, …]<|tools_suffix|>` —
 * each call is an object keyed by the tool name. The suffix is often missing at the end of
 * output; the array's end then ends the envelope.
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter, nameKeyedToCall } from '../kit/long-tail.js';

export const apertus = defineFamily({
  name: 'apertus',
  markers: ['<|tools_prefix|>'],
  priority: 42,
  backend: { vllm: 'apertus', llamacpp: 'Apertus' },
  match: (input) =>
    matchJsonAfter(input, { opens: '[', closer: '<|tools_suffix|>', toCall: nameKeyedToCall }),
});
