/**
 * Output x1 vs x4 costs at most about x4 for the readings recall14 added
 * (tests/parsers/perturb-recall14.test.ts): an envelope whose closing marker the end of output cut
 * (GLM, Qwen3-Coder's wrapper, a bare `<function=`, gpt-oss's terminator), and Functionary v3.2's
 * recipient line ended by CRLF. Many envelopes left open before the cut marker, one long value, long
 * blank runs and many sections must stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf } from './engine-helpers.js';

const tools = toolsOf(READ_FILE);
const glm = (v: string) => `<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>${v}</arg_value>\n`;
const qwen = (v: string) =>
  `<tool_call>\n<function=read_file>\n<parameter=path>\n${v}\n</parameter>\n</function>\n`;
const harmony = (v: string) =>
  `<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path": "${v}"}`;

describe('recall14 readings: output length x1 vs x4', () => {
  it('closing markers cut by the end of output, CRLF recipient lines: many, broken, long', () => {
    budget(
      'recall14 readings',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.15) return `${glm('a'.repeat(size))}</tool_ca`;
        if (r < 0.3)
          return `${soup(rnd, size, [glm('a'), '<tool_call>read_file\n', '<arg_key>', ' ', '\n'], 0.3)}</tool_ca`;
        if (r < 0.45)
          return `${soup(rnd, size, [qwen('a'), '<tool_call>\n', '<function=read_file>\n', ' '], 0.3)}</tool_ca`;
        if (r < 0.6)
          return `${'<function=read_file>{"path": "a"}'.repeat(size / 32)}${' '.repeat(size / 4)}</functi`;
        if (r < 0.75)
          return `${soup(rnd, size, [harmony('a'), '<|start|>assistant', '<|message|>', ' '], 0.3)}<|cal`;
        if (r < 0.9)
          return soup(
            rnd,
            size,
            ['>>>read_file\r\n{"path": "a"}', '>>>read_file\r', '\r\n', '>>>', ' '],
            0.3,
          );
        return `>>>read_file\r\n{"path": "${'a'.repeat(size)}"}\r\n`;
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      14_001,
    );
  }, 120_000);
});
