/**
 * Granite-20B-FunctionCalling (vLLM `granite-20b-fc`): each call is `<function_call> {"name": …,
 * "arguments": …}` with no end marker; several calls repeat the marker.
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter } from '../kit/long-tail.js';

export const granite20bFc = defineFamily({
  name: 'granite-20b-fc',
  markers: ['<function_call>'],
  priority: 42,
  backend: { vllm: 'granite-20b-fc' },
  match: (input) => matchJsonAfter(input, { opens: '{' }),
});
