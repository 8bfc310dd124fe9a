/**
 * Pythonic (Llama 3.2 / 4, some others): [get_weather(city="Paris", days=3), now()] with
 * Python literals. Strict: the WHOLE output (modulo whitespace) is the list, or the list is
 * wrapped in <|python_start|>…<|python_end|>, or the list is on its own line at the END of the
 * output after prose ("Let me check.\n[get_weather(…)]"). The same list inside a sentence, or
 * followed by more text, stays prose.
 */
import { defineFamily } from './define.js';
import type { EnvelopeMatch, MatchResult } from './family.js';
import { peekNonWs } from './util/envelope.js';
import { readName, scanJsonValue, skipWs } from './util/json-scan.js';
import { parsePythonCallList } from './util/python-literal.js';

const START = '<|python_start|>';
const END = '<|python_end|>';
/** A list opening a line after prose. */
const LINE_LIST = '\n[';

function read(body: string): EnvelopeMatch | null {
  const calls = parsePythonCallList(body);
  if (!calls) return null;
  return { end: 0, calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) };
}

/**
 * `[name(` at a line start: a call list only if it closes and nothing but whitespace follows
 * it to the end of output, so this waits for the end (only such lines are held, prose with a
 * `[link](…)` or `[1]` is decided at its second word). Not a call list: plain text, no leak.
 */
function listEndingOutput(text: string, j: number, final: boolean): MatchResult {
  const name = readName(text, j + 1);
  const k = j + 1 + name.length;
  if (k >= text.length) return final ? null : 'need-more';
  if (name === '' || text[k] !== '(') return null;
  const scan = scanJsonValue(text, j, { singleQuotes: true });
  if (!scan || scan.end < 0) return final ? null : 'need-more';
  if (skipWs(text, scan.end) < text.length) return null;
  if (!final) return 'need-more';
  const m = read(text.slice(j, scan.end));
  return m ? { ...m, end: text.length } : null;
}

export const pythonic = defineFamily({
  name: 'pythonic',
  markers: [START, LINE_LIST],
  priority: 31,
  backend: { vllm: 'pythonic', llamacpp: 'Llama 3.x (builtin tools)', sglang: 'pythonic' },
  match({ text, start, marker, final, find }): MatchResult {
    if (marker === LINE_LIST) return listEndingOutput(text, start + 1, final);
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
