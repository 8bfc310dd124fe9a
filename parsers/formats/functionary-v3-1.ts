/**
 * Functionary v3.1 (Llama 3.1 based; llama.cpp "Functionary v3.1 Llama 3.1"). Its calls are
 * `<function=NAME>{json}</function>`, which the qwen3-coder family already reads (a JSON body
 * inside `<function=…>`), so this family only adds the code interpreter form:
 *   <|python_tag|>print(2 + 2)
 * raw Python to the end of output (or `<|eom_id|>` / `<|eot_id|>`), recovered as a call of
 * the declared `python` tool with `{"code": …}`. `<|python_tag|>` followed by JSON is Llama 3's
 * JSON call format, left to the llama3-json family; so is everything when no `python` tool is
 * declared (llama3-json then reports the built-in code call as unrecovered). The priority is
 * below llama3-json's so this family is asked first.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { peekNonWs } from '../kit/envelope.js';

const TAG = '<|python_tag|>';
const STOPS = ['<|eom_id|>', '<|eot_id|>'];

export const functionaryV31 = defineFamily({
  name: 'functionary-v3-1',
  markers: [TAG],
  priority: 29,
  backend: { llamacpp: 'Functionary v3.1 Llama 3.1' },
  match({ text, start, final, find, ctx }): MatchResult {
    if (!ctx.tools.has('python')) return null;
    const from = start + TAG.length;
    const j = peekNonWs(text, from, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return { end: text.length, calls: [], error: 'empty envelope', truncated: true };
    if (text[j] === '{' || text[j] === '[') return null;
    let stop = -1;
    let stopLen = 0;
    for (const s of STOPS) {
      const at = find(s, from);
      if (at >= 0 && (stop < 0 || at < stop)) {
        stop = at;
        stopLen = s.length;
      }
    }
    // the code runs to the end of output unless a stop token comes: wait for either
    if (stop < 0 && !final) return 'need-more';
    const code = text.slice(from, stop < 0 ? text.length : stop).trim();
    return { end: stop < 0 ? text.length : stop + stopLen, calls: [{ name: 'python', arguments: { code } }] };
  },
});
