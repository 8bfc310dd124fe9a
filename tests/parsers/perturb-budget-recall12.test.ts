/**
 * Output x1 vs x4 costs at most about x4 for the readings recall12 added
 * (tests/parsers/perturb-recall12.test.ts, parsers/engine/repeated-envelope.ts): an envelope's
 * opening or its closing run written twice. Each marker now also looks for the family's marker
 * again within a window and asks the family about the text before it; each call looks back over
 * its closing tags: many of them, many that break, and one long value must stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf } from './engine-helpers.js';

const tools = toolsOf(READ_FILE);
const hermes = (v: string) => `<tool_call>{"name": "read_file", "arguments": {"path": "${v}"}}</tool_call>`;
const qwen = (v: string) =>
  `<tool_call>\n<function=read_file>\n<parameter=path>\n${v}\n</parameter>\n</function>\n</tool_call>`;
const deepseek = (v: string) =>
  `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "${v}"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`;

describe('recall12 readings (an opening written twice): output length x1 vs x4', () => {
  it('many restarts, many openers no copy follows, openers in a row, one long value', () => {
    budget(
      'doubled opening',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.25) return `<tool_call>${hermes('a'.repeat(size))}`;
        if (r < 0.5)
          return soup(rnd, size, [`<tool_call>${hermes('a')}`, '<tool_call>', `<function=read_file>`], 0.3);
        if (r < 0.75) return `${'<tool_call>'.repeat(size / 11)}${hermes('a')}`;
        return soup(
          rnd,
          size,
          [
            '[TOOL_CALLS]',
            '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}]',
            '<|python_tag|>',
            ' ',
          ],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      12_001,
    );
  }, 120_000);
});

describe('recall12 readings (a closing run written twice): output length x1 vs x4', () => {
  it('many calls each closed twice, many cut repeats, a long run of closing tags, one long value', () => {
    budget(
      'doubled closing run',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.25) return `${qwen('a'.repeat(size))}</function>\n</tool_call>`;
        if (r < 0.5)
          return soup(
            rnd,
            size,
            [
              `${qwen('a')}</function>\n</tool_call>`,
              `${deepseek('a')}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
              '</function>',
            ],
            0.3,
          );
        if (r < 0.75) return `${qwen('a')}${'</function>\n</tool_call>'.repeat(size / 25)}`;
        return `${deepseek('a')}${'<｜tool▁call▁end｜>'.repeat(size / 16)}`;
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      12_002,
    );
  }, 120_000);
});

describe('recall12 readings (an end-of-turn token after a call, a call in quotation marks): output length x1 vs x4', () => {
  it('many calls each followed by a token or blanks, long blank runs, many quoted calls left open', () => {
    const call = (v: string) => `<function=read_file>{"path": "${v}"}</function>`;
    budget(
      'end-of-turn token and quotation marks',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.2) return `${call('a'.repeat(size))}</s>`;
        if (r < 0.4) return `${call('a')}${' '.repeat(size)}</s>${' '.repeat(size)}`;
        if (r < 0.6)
          return soup(rnd, size, [`${call('a')}</s>`, `${call('a')} <|eot_id|>`, '</s>', ' ', '\n'], 0.3);
        if (r < 0.8) return soup(rnd, size, [` "${call('a')}" `, ` "${call('a')}`, '“', ' ', 'word'], 0.3);
        return `"${call('a')}${' '.repeat(size)}"`;
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      12_003,
    );
  }, 120_000);
});
