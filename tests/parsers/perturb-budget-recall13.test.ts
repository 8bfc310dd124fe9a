/**
 * Output x1 vs x4 costs at most about x4 for the readings recall13 added
 * (tests/parsers/perturb-recall13.test.ts): Hermes' `}` too many before its closing tag, a closing
 * fence after a bare Llama 3 JSON call, DeepSeek's section close spelled with `_`. Many of each,
 * many that break (no closing tag after the brace, sections left open), long blank runs, one long
 * value must stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf } from './engine-helpers.js';

const tools = toolsOf(READ_FILE);
const body = (v: string) => `{"name": "read_file", "arguments": {"path": "${v}"}}`;
const head = (v: string) =>
  `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "${v}"}<｜tool▁call▁end｜>`;

describe('recall13 readings: output length x1 vs x4', () => {
  it('extra braces, stray fences, misspelled section closes: many, broken, long', () => {
    budget(
      'recall13 leftovers',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.2) return `<tool_call>${body('a'.repeat(size))}}\n</tool_call>`;
        if (r < 0.4)
          return soup(
            rnd,
            size,
            [`<tool_call>${body('a')}}\n</tool_call>`, `<tool_call>${body('a')}}`, '}', ' ', '\n'],
            0.3,
          );
        if (r < 0.55) return `<tool_call>${body('a')}}${' '.repeat(size)}`;
        if (r < 0.7)
          return `{"name": "read_file", "parameters": {"path": "${'a'.repeat(size)}"}}\n${' '.repeat(size / 4)}\`\`\``;
        if (r < 0.85) return `${'<｜tool▁calls▁begin｜>'.repeat(size / 21)}${head('a')}<｜tool_calls_end｜>`;
        return soup(rnd, size, [head('a'), '<｜tool_calls_end｜>', '<｜tool▁calls▁begin｜>', ' '], 0.3);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      13_001,
    );
  }, 120_000);
});
