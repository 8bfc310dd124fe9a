/**
 * Phi-4-mini (vLLM `phi4_mini_json`): `functools[{"name": …, "arguments": …}, …]`, no end marker.
 * The marker ends with the array's own `[`; `functools[` in Python code (`functools[key](…)`) is
 * not followed by `{` or `]`, so it stays prose.
 */
import { defineFamily } from '../engine/define.js';
import { matchJsonAfter } from '../kit/long-tail.js';
import { peekNonWs } from '../kit/envelope.js';

const MARKER = 'functools[';

export const phi4Mini = defineFamily({
  name: 'phi4-mini',
  markers: [MARKER],
  priority: 42,
  backend: { vllm: 'phi4_mini_json' },
  match(input) {
    const j = peekNonWs(input.text, input.start + MARKER.length, input.final);
    if (j === 'need-more') return 'need-more';
    if (j !== 'end' && input.text[j] !== '{' && input.text[j] !== ']') return null;
    return matchJsonAfter(input, { opens: '[', bodyStart: ({ start }) => start + MARKER.length - 1 });
  },
});
