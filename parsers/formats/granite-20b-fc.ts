/**
 * Granite-20B-FunctionCalling (vLLM `granite-20b-fc`): each call is `<function_call> {"name": …,
 * "arguments": …}` with no end marker; several calls repeat the marker. Granite 3.x under a
 * prompt that shows the tag closed writes `<function_call>{…}</function_call>`: a
 * `</function_call>` right after the object belongs to the envelope, not to the content
 * (ibm-granite-community/granite-retrieval-agent#33).
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter } from '../kit/long-tail.js';

export const granite20bFc = defineFamily({
  name: 'granite-20b-fc',
  markers: ['<function_call>'],
  priority: 42,
  backend: { vllm: 'granite-20b-fc' },
  match: (input) => matchJsonAfter(input, { opens: '{', closer: '</function_call>' }),
});
