/**
 * Output x1 vs x4 costs at most about x4 for the readings the perturbation generator led to
 * (tests/parsers/perturb.test.ts): a `<function=NAME>` body that is one JSON string, and JSON
 * strings holding raw line breaks (jsonrepair now runs on them); improvised calls naming a
 * declared tool in another case (recall8: the reader's renamed names, the case-folding name start).
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { READ_FILE, pushed64, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);

describe('generator readings: output length x1 vs x4', () => {
  it('a <function=NAME> body that is one long JSON string, and many such bodies', () => {
    budget(
      'function body as a JSON string',
      (size, rnd) =>
        rnd() < 0.5
          ? `<function=read_file>"{\\"path\\": \\"${'a'.repeat(size)}\\"}"</function>`
          : soup(rnd, size, ['<function=read_file>"{\\"path\\": \\"a\\"}"</function>', '"', '\\"', ' ']),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7701,
    );
  }, 120_000);

  it('JSON arguments whose strings hold raw line breaks', () => {
    budget(
      'raw line breaks in JSON strings',
      (size, rnd) =>
        `[TOOL_CALLS]write_file[ARGS]{"path": "a", "content": "${soup(rnd, size, ['line\n', '\t', 'x', '\\"', ' '], 0)}"}`,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7702,
    );
  }, 120_000);

  it('a list of many calls glued without commas', () => {
    budget(
      'glued list items',
      (size, rnd) =>
        `[TOOL_CALLS][${soup(rnd, size, ['{"name": "read_file", "arguments": {"path": "a"}}', '{', '}', '[', ']', ' '], 0.1)}]`,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7703,
    );
  }, 120_000);

  it('closing tags misspelled: many, and one after a long body or a long blank run', () => {
    budget(
      'misspelled closing tags',
      (size, rnd) =>
        rnd() < 0.5
          ? soup(
              rnd,
              size,
              [
                '<function=read_file>{"path": "a"}</functon>',
                '<tool_call>read_file\n<arg_key>path</arg_key><arg_value>a</arg_value></tool_cal>',
                ' ',
                '\n',
              ],
              0.2,
            )
          : `<tool_call>read_file\n<arg_key>path</arg_key><arg_value>${'a'.repeat(size)}</arg_value></tool_cal>${' '.repeat(size)}`,
      pushed64(tools),
      // The long reading is 2 x size characters in one envelope never closed: at 4x it must stay
      // under the 1 MB an envelope is held (maxHeld). Up to 256,000, the 4x run's 2 MB went past
      // it and was released as text, ~3x the CPU a character from there (size 500,000: 8.5 ms,
      // 600,000: 29.8 ms): linear on each side of the cap, x10-13 across it, which failed a
      // clean full run on the loaded box. A held-text rescan per push still reads x21.
      { from: 2000, max: 128_000 },
      7704,
    );
  }, 120_000);

  it('Functionary v3.2 arguments as a JSON string: one long, many, many unclosed', () => {
    budget(
      'functionary string arguments',
      (size, rnd) =>
        rnd() < 0.5
          ? `>>>read_file\n"{\\"path\\": \\"${'a'.repeat(size)}\\"}"`
          : soup(rnd, size, ['>>>read_file\n"{\\"path\\": \\"a\\"}"', '>>>read_file\n"', '\\"', ' '], 0.2),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7705,
    );
  }, 120_000);

  it('a name in another case: one long keyword call, many {tool, args} objects, many tags', () => {
    budget(
      'renamed improvised calls',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.34) return `READ_FILE(path="${'a'.repeat(size)}")`;
        if (r < 0.67)
          return `[${soup(rnd, size, ['{"tool": "Read_File", "args": {"path": "a"}}, ', '{"tool": "READ_FILE", ', '"a", '], 0.1)}{"tool": "Read_File", "args": {"path": "a"}}]`;
        return soup(rnd, size, ['<Read_File><path>a</path></Read_File>', '<READ_FILE>', '<path>', ' '], 0.2);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7706,
    );
  }, 120_000);

  it('keys without quotes: many in one object, and long blank runs after bare words', () => {
    budget(
      'unquoted keys',
      (size, rnd) =>
        rnd() < 0.5
          ? `[TOOL_CALLS]read_file[ARGS]{${soup(rnd, size, ['path: "a", ', 'p_1: 1, ', 'x  ', '   ', ': '], 0.1)}path: "a"}`
          : `<tool_call>{"name": "read_file", "arguments": {path${' '.repeat(size)}: "a"}}</tool_call>`,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7707,
    );
  }, 120_000);

  it('a whole-output call then a stray closing fence: one long, many calls before it', () => {
    budget(
      'stray closing fence',
      (size, rnd) =>
        rnd() < 0.5
          ? `{"tool": "read_file", "tool_input": {"path": "${'a'.repeat(size)}"}}\n\`\`\``
          : `[${soup(rnd, size, ['{"tool": "read_file", "tool_input": {"path": "a"}}, ', '`', ' '], 0)}{"tool": "read_file", "tool_input": {"path": "a"}}]\n\`\`\``,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7708,
    );
  }, 120_000);

  it('JSON arguments with an extra closing brace: one long, many', () => {
    budget(
      'extra closing brace',
      (size, rnd) =>
        rnd() < 0.5
          ? `<function=read_file>{"path": "${'a'.repeat(size)}"}}</function>`
          : soup(rnd, size, ['<function=read_file>{"path": "a"}}</function>', '}}', '{', ' '], 0.2),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      7709,
    );
  }, 120_000);
});
