/**
 * The readings added for small models' near misses (tests/fixtures/parsers/near-miss-small.json):
 * output length x1 vs x4 costs at most about x4 in CPU time and retained memory
 * (tests/support/cost-scaling.ts), streamed in 64-char pushes. Each input is the worst shape for
 * one change: quoted text (backticks, fences, `>` lines, comment delimiters) between envelopes
 * that each ask where the content stands, Hermes blocks of many call objects on their own
 * lines (closed, or never closed), renamed calls (`functions.NAME`, another case) among many
 * declared tools, GLM names followed by a JSON object, Hermes calls closed by mistyped tags, and long strings of raw backslashes the lenient readers must refuse.
 */
import { describe, it } from 'vitest';
import { budget, pick, soup } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const readFile = {
  name: 'read_file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
const run = pushed64(toolsOf(readFile));
const CALL = '{"name": "read_file", "arguments": {"path": "a"}}';

describe('small-model near-miss readings: output length x1 vs x4', () => {
  it('quoted text between envelopes', () => {
    budget(
      'quoted text',
      (size, rnd) =>
        soup(rnd, size, [
          '`',
          '``',
          '\n```\n',
          '\n> ',
          '<!--',
          '-->',
          '-',
          'a -> b ',
          'prose ',
          `<tool_call>${CALL}</tool_call>`,
          '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
          '\n',
        ]),
      run,
      { from: 2000, max: 256_000 },
      3201,
    );
  }, 120_000);

  it('Hermes blocks of call objects on their own lines', () => {
    budget(
      'hermes object lines',
      (size, rnd) => {
        const closed = rnd() < 0.5;
        let text = '<tool_call>\n';
        while (text.length < size) text += `${CALL}\n`;
        return closed ? `${text}</tool_call>` : `${text}{"name": "read_file", "arguments": {`;
      },
      run,
      { from: 2000, max: 256_000 },
      3202,
    );
  }, 120_000);

  it('renamed calls among many declared tools', () => {
    const many = toolsOf(
      readFile,
      ...Array.from({ length: 2000 }, (_, i) => ({ name: `tool_${i}`, parameters: { type: 'object' } })),
    );
    budget(
      'renamed calls',
      (size, rnd) =>
        soup(
          rnd,
          size,
          [
            '<tool_call>{"name": "functions.read_file", "arguments": {"path": "a"}}</tool_call>\n',
            '<tool_call>{"name": "READ_FILE", "arguments": {"path": "a"}}</tool_call>\n',
            '<tool_call>{"name": "TOOL_7", "arguments": {"x": 1}}</tool_call>\n',
            '<tool_call>{"name": "functions.Nope", "arguments": {}}</tool_call>\n',
          ],
          0.1,
        ),
      pushed64(many),
      { from: 2000, max: 256_000 },
      3203,
    );
  }, 120_000);

  it('GLM calls of a name and a JSON object, closed and not', () => {
    budget(
      'glm json arguments',
      (size, rnd) =>
        soup(
          rnd,
          size,
          ['<tool_call>read_file\n{"path": "a"}\n</tool_call>\n', '<tool_call>read_file\n{"path": "'],
          0.3,
        ),
      run,
      { from: 2000, max: 256_000 },
      3205,
    );
  }, 120_000);

  it('Hermes calls closed by mistyped tags, and `</` never closed', () => {
    budget(
      'hermes close slips',
      (size, rnd) =>
        soup(
          rnd,
          size,
          [
            `<tool_call>${CALL}</tool_calls>\n`,
            `<tool_call>${CALL}\n<tool_call>\n`,
            `<tool_call>${CALL}</ ${'x'.repeat(40)}`,
            `<tool_call>${CALL}</`,
            ' ',
          ],
          0.3,
        ),
      run,
      { from: 2000, max: 256_000 },
      3206,
    );
  }, 120_000);

  it('long strings of raw backslashes', () => {
    budget(
      'raw backslashes',
      (size, rnd) => {
        const path = 'C:\\Users\\me'.repeat(Math.ceil(size / 11));
        return pick(rnd, [
          `<tool_call>\n{'name': 'read_file', 'arguments': {'path': '${path}',}}\n</tool_call>`,
          `[read_file(path="${path}")]`,
          `{"name": "read_file", "arguments": {"path": "${path}"}}`,
        ]);
      },
      run,
      { from: 2000, max: 256_000 },
      3204,
    );
  }, 120_000);
});
