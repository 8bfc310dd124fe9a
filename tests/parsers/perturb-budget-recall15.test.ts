/**
 * Output x1 vs x4 costs at most about x4 for the readings recall15 added
 * (tests/parsers/perturb-recall15.test.ts): a fence closed at a line start past ``` inside its
 * call (many fences whose closes are all mid-line must not search the rest of the output each),
 * a second bare call run after an announcing sentence (Llama 3 JSON, pythonic), and Command R+'s
 * `- Action:` list items. Many markers, broken runs and one long value must stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, READ_FILE, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const JSON_CALL = '{"name": "read_file", "parameters": {"path": "a"}}';

describe('recall15 readings: output length x1 vs x4', () => {
  it('fences with ``` inside, second call runs, bulleted Action lines: many, broken, long', () => {
    budget(
      'recall15 readings',
      (size, rnd) => {
        const r = rnd();
        // fence after fence, each closed mid-line (no close at a line start anywhere)
        if (r < 0.15) return '```tool_code\nread_file(path="a")``` '.repeat(size / 37);
        if (r < 0.3)
          return soup(rnd, size, ['```tool_code\n', 'read_file(path="```")', '```', '\n```', ' ', '\n'], 0.3);
        // one fence, a long value full of mid-line ```
        if (r < 0.4)
          return `\`\`\`tool_code\nwrite_file(path="a", content="${'x```'.repeat(size / 4)}")\n\`\`\``;
        // a leading bare call, then a long sentence and many line-start braces that are no calls
        if (r < 0.55)
          return `${JSON_CALL}\n\nThen I will do it.\n${'{"name": "read_file", '.repeat(size / 22)}`;
        if (r < 0.65) return `${JSON_CALL}\n\n${'Then I will do it. '.repeat(size / 19)}\n${JSON_CALL}`;
        if (r < 0.75)
          return `[read_file(path="a")]\n\nNow the edit.\n${'[read_file(path="a"'.repeat(size / 19)}`;
        if (r < 0.9)
          return soup(
            rnd,
            size,
            [
              '- Action:\n',
              '* Action:\n',
              '```json\n',
              '[{"tool_name": "read_file", "parameters": {"path": "a"}}]',
              '\n```\n',
              ' ',
            ],
            0.3,
          );
        return `- Action:\n\`\`\`json\n[{"tool_name": "read_file", "parameters": {"path": "${'a'.repeat(size)}"}}]\n\`\`\``;
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      15_001,
    );
  }, 120_000);
});
