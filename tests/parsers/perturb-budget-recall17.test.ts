/**
 * Output x1 vs x4 costs at most about x4 for the readings recall17 added: Gemma 4's pairs in
 * parentheses (`<|tool_call>call:NAME(key: value, …)`, `parsers/formats/gemma4.ts` colonCall: the
 * body read once more when it is not a Python call) and the promotion of a call section in the
 * reasoning whose end marker the end of the reasoning cut (`parsers/engine/engine.ts` promote:
 * the reasoning scanned once at the end, as before). Many pairs, long values, parentheses and
 * braces that never close, many cut sections and one long one must stay linear. And recall19's
 * promotion of reasoning that is all one whole-output call (`promoteWhole`: the reasoning read
 * once more, as a whole output, only when no envelope in it was a call): long child values,
 * many children, deep elements, long and many JSON calls, starts that never read.
 */
import { describe, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);

/** The text streamed as upstream reasoning in 64-unit pieces, no content. */
function reasoning64(t: Map<string, DeclaredTool>) {
  return (text: string) => {
    let n = 0;
    const s = createRecoveryStream({ tools: t, newId: () => `c${n++}` });
    const events = [];
    for (let i = 0; i < text.length; i += 64) events.push(...s.push({ reasoning: text.slice(i, i + 64) }));
    events.push(...s.finish());
    return events;
  };
}

const KIMI = (path: string) =>
  `<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "${path}"}<|tool_call_end|><|tool_calls_section_end|>`;

describe('recall17 readings: output length x1 vs x4', () => {
  it('Gemma 4 call:NAME(key: value): many pairs, long values, unclosed', () => {
    budget(
      'recall17 gemma4 parentheses',
      (size, rnd) => {
        const r = rnd();
        // one call, a long JSON string value
        if (r < 0.15)
          return `<|tool_call>call:write_file(path: "a", content: "${'x), '.repeat(size / 4)}")<tool_call|>`;
        // one call, a long delimited value
        if (r < 0.3)
          return `<|tool_call>call:write_file(path: <|"|>a<|"|>, content: <|"|>${'y)('.repeat(size / 3)}<|"|>)<tool_call|>`;
        // many pairs
        if (r < 0.45)
          return `<|tool_call>call:read_file(${'path: "a", '.repeat(size / 11)}path: "b")<tool_call|>`;
        // parentheses that never close, then the end marker
        if (r < 0.55) return `<|tool_call>call:read_file(${'path: ('.repeat(size / 7)}<tool_call|>`;
        // nested lists and objects in a pair
        if (r < 0.65) {
          const n = size / 10;
          return `<|tool_call>call:read_file(path: ${'[{k: '.repeat(n)}1${'}]'.repeat(n)})<tool_call|>`;
        }
        // many calls back to back
        if (r < 0.75) return '<|tool_call>call:read_file(path: "a")<tool_call|>\n'.repeat(size / 47);
        return soup(
          rnd,
          size,
          ['<|tool_call>', 'call:read_file', '(', ')', 'path: ', '"a"', '<|"|>', ', ', '<tool_call|>', ' '],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      17_001,
    );
  }, 120_000);

  it('a cut call section at the end of the reasoning: many sections, one long, cut markers', () => {
    budget(
      'recall17 cut section in reasoning',
      (size, rnd) => {
        const r = rnd();
        // many complete sections, the last one cut inside its end marker
        if (r < 0.25) {
          const full = `${KIMI('a')} `.repeat(size / 160);
          return `${full}${KIMI('b').slice(0, -3)}`;
        }
        // one section, a long value, cut inside its end marker
        if (r < 0.45) return KIMI('z'.repeat(size)).slice(0, -3);
        // Hermes blocks, the last cut inside </tool_call>
        if (r < 0.6)
          return `${'<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call> '.repeat(size / 75)}<tool_call>\n{"name": "read_file", "arguments": {"path": "b"}}\n</tool_ca`;
        // openers that never close
        if (r < 0.75)
          return `I will look. ${'<|tool_calls_section_begin|><|tool_call_begin|>'.repeat(size / 48)}<|tool_calls_section_end|`;
        return soup(
          rnd,
          size,
          [
            '<|tool_calls_section_begin|>',
            '<|tool_call_begin|>functions.read_file:0',
            '<|tool_call_argument_begin|>{"path": "a"}',
            '<|tool_call_end|>',
            '<|tool_calls_section_end|',
            '</tool_ca',
            ' ',
          ],
          0.3,
        );
      },
      reasoning64(tools),
      { from: 2000, max: 256_000 },
      17_002,
    );
  }, 120_000);

  it('reasoning that is all one whole-output call: long values, many children, deep, unreadable', () => {
    budget(
      'recall19 whole reasoning promoted',
      (size, rnd) => {
        const r = rnd();
        // one element, a long child value
        if (r < 0.15) return `<invoke name="read_file">\n  <path>${'x<'.repeat(size / 2)}</path>\n</invoke>`;
        // many children (a duplicate key: no call)
        if (r < 0.3) return `<invoke name="read_file">${'<path>a</path>'.repeat(size / 14)}</invoke>`;
        // elements nested deep, closed
        if (r < 0.42) {
          const n = size / 7;
          return `<invoke name="read_file">${'<a><b>'.repeat(n)}${'</b></a>'.repeat(n)}</invoke>`;
        }
        // a bare JSON call, a long string value
        if (r < 0.54) return `{"name": "read_file", "arguments": {"path": "${'y\\n'.repeat(size / 3)}"}}`;
        // a JSON list of many calls
        if (r < 0.66)
          return `[${'{"name": "read_file", "arguments": {"path": "a"}}, '.repeat(size / 51)}{"name": "read_file", "arguments": {"path": "b"}}]`;
        // starts like a whole output, never one
        if (r < 0.78) return `{${' "path": "a" and then some prose'.repeat(size / 33)}`;
        return soup(
          rnd,
          size,
          [
            '<invoke name="read_file">',
            '<path>',
            'a',
            '</path>',
            '</invoke>',
            '{"name": "read_file"',
            '"arguments": ',
            '{',
            '}',
            '[',
            ']',
            ' ',
          ],
          0.3,
        );
      },
      reasoning64(tools),
      { from: 2000, max: 256_000 },
      19_001,
    );
  }, 120_000);
});
