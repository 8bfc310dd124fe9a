/**
 * Pythonic (Llama 3.2 / 4, some others): [get_weather(city="Paris", days=3), now()] with
 * Python literals. Strict: the WHOLE output (modulo whitespace) is the list, or the list is
 * wrapped in <|python_start|>…<|python_end|>; the same list inside prose stays prose.
 */
import { defineFamily } from './define.js';
import type { EnvelopeMatch, MatchResult } from './family.js';
import { peekNonWs } from './util/envelope.js';
import { parsePythonCallList } from './util/python-literal.js';

const START = '<|python_start|>';
const END = '<|python_end|>';

function read(body: string): EnvelopeMatch | null {
  const calls = parsePythonCallList(body);
  if (!calls) return null;
  return { end: 0, calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) };
}

export const pythonic = defineFamily({
  name: 'pythonic',
  markers: [START],
  priority: 31,
  backend: { vllm: 'pythonic', llamacpp: 'Llama 3.x (builtin tools)', sglang: 'pythonic' },
  match({ text, start, marker, final, find }): MatchResult {
    const j = peekNonWs(text, start + marker.length, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end' || text[j] !== '[') return null;
    const close = find(END, j);
    if (close < 0)
      return final
        ? { end: text.length, calls: [], error: 'unclosed python_start', truncated: true }
        : 'need-more';
    const end = close + END.length;
    const m = read(text.slice(j, close));
    return m ? { ...m, end } : { end, calls: [], error: 'not a pythonic call list' };
  },
  wholeStarts: ['['],
  matchWhole(text) {
    const m = read(text);
    return m ? { ...m, end: text.length } : null;
  },
});
