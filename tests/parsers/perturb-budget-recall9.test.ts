/**
 * Output x1 vs x4 costs at most about x4 for the readings recall9 added (tests/parsers/perturb.test.ts,
 * docs/recall.md): quotes escaped outside strings (the scanner's escaped strings, the one-pass
 * unescape), a last `}` missing before an end marker, GLM argument tags written twice or `<tool_call>`
 * for the first `<arg_key>`, and DSML blocks with their bar spelled otherwise.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const tools = toolsOf(
  {
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'list_files', parameters: { type: 'object', properties: {} } },
);

describe('recall9 readings: output length x1 vs x4', () => {
  it('quotes escaped outside strings: one long value, many escaped strings, many left open', () => {
    budget(
      'escaped quotes',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.34)
          return `<tool_call>{"name": "read_file", "arguments": {\\"path\\": \\"${'a'.repeat(size)}\\"}}</tool_call>`;
        if (r < 0.67)
          return `{\\"name\\": \\"read_file\\", \\"arguments\\": {${soup(rnd, size, ['\\"path\\": \\"a\\", ', '\\"x\\": \\"\\\\\\"\\"', ' '], 0)}\\"path\\": \\"a\\"}}`;
        return soup(rnd, size, ['<tool_call>{\\"', '{\\"a', '\\\\\\"', '\\"}', '"', ' '], 0.3);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      9701,
    );
  }, 120_000);

  it('a last brace missing before the end marker: one long, many', () => {
    const block = (v: string) =>
      `<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "${v}"<|tool_call_end|><|tool_calls_section_end|>`;
    budget(
      'missing brace before an end marker',
      (size, rnd) =>
        rnd() < 0.5
          ? block('a'.repeat(size))
          : soup(rnd, size, [block('a'), '<function=read_file>{"path": "a"</function>', '{', ' '], 0.2),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      9702,
    );
  }, 120_000);

  it('GLM tags written twice, <tool_call> for <arg_key>, a stray </arg_value>: many, one long', () => {
    budget(
      'GLM tag slips',
      (size, rnd) =>
        rnd() < 0.5
          ? soup(
              rnd,
              size,
              [
                '<tool_call>read_file<arg_key><arg_key>path</arg_key><arg_value>a</arg_value></tool_call>',
                '<tool_call>read_file<arg_key>path</arg_key></arg_key><arg_value>a</arg_value></tool_call>',
                '<tool_call>read_file<tool_call>path</arg_key><arg_value>a</arg_value></tool_call>',
                '<tool_call>list_files</arg_value></tool_call>',
                '<arg_key>',
                ' ',
              ],
              0.2,
            )
          : `<tool_call>read_file<arg_key><arg_key>${'p'.repeat(size)}</arg_key></arg_key><arg_value>a</arg_value></tool_call>`,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      9703,
    );
  }, 120_000);

  it('DSML with another bar: many blocks, many left open, one long value', () => {
    const dsml = (bar: string, v: string) =>
      `<${bar}DSML${bar}function_calls><${bar}DSML${bar}invoke name="read_file"><${bar}DSML${bar}parameter name="path" string="true">${v}</${bar}DSML${bar}parameter></${bar}DSML${bar}invoke></${bar}DSML${bar}function_calls>`;
    budget(
      'DSML bars',
      (size, rnd) =>
        rnd() < 0.5
          ? dsml('‖', 'a'.repeat(size))
          : soup(
              rnd,
              size,
              [dsml('｜｜', 'a'), dsml('|', 'a'), '<‖DSML‖function_calls>', '<|DSML|', ' '],
              0.3,
            ),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      9704,
    );
  }, 120_000);
});
