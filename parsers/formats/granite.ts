/**
 * IBM Granite 3.x (vLLM `granite`): `<|tool_call|>[{"name": …, "arguments": …}, …]` with no end
 * marker (the array's end is the envelope's end). Granite 3.1+ also writes the plain-text
 * `<tool_call>` before the array, sometimes followed by `</tool_call>` (xLAM does that too).
 * `<tool_call>` is Hermes' marker: Hermes claims an object after it, this family only an array.
 * Granite 4 writes Hermes' `<tool_call>{…}</tool_call>`, which the hermes family reads. Phi-4
 * variants close the token form with `<|/tool_call|>`: consumed when present.
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter } from '../kit/long-tail.js';

const TOKEN = '<|tool_call|>';
const TEXT = '<tool_call>';

export const granite = defineFamily({
  name: 'granite',
  markers: [TOKEN, TEXT],
  priority: 42,
  backend: { vllm: 'granite', llamacpp: 'Granite', sglang: 'granite' },
  match(input) {
    return input.marker === TOKEN
      ? matchJsonAfter(input, { opens: '[{', closer: '<|/tool_call|>' })
      : matchJsonAfter(input, { opens: '[', closer: '</tool_call>' });
  },
});
