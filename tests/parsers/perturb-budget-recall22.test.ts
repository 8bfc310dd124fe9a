/**
 * Output x1 vs x4 costs at most about x4 for the readings recall22 changed: arguments held in an
 * object beside empty ones (`parsers/kit/structured-reader.ts` heldArgs: one pass over the
 * holder's keys, tried once per holder that does not fit), and triple-quoted strings refused
 * outside Python (`parsers/kit/python-literal.ts` at the opener; `parsers/kit/lenient-json.ts`
 * escapeStrayQuotes at the string's first quote, classify at a string after a string). Many
 * empty siblings, many tags, long values, many calls read or refused, and a soup of the pieces
 * stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { pushed64, toolsOf, WRITE_FILE } from './engine-helpers.js';

const TEMPERATURE: DeclaredTool = {
  name: 'get_temperature',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};
const tools = toolsOf(TEMPERATURE, WRITE_FILE);
const empties = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}": {}`).join(', ');

const ROWS: [string, (size: number) => string][] = [
  // one holder, its arguments beside many empty objects
  [
    'held: many empty siblings',
    (size) =>
      `<tool_call>{"name": "get_temperature", "function_call": {"args": {"location": "X"}, ${empties(size / 10)}}}</tool_call>`,
  ],
  // the same bare (the improvised reader)
  [
    'held: many empty siblings, bare',
    (size) =>
      `{"name": "get_temperature", "function_call": {"args": {"location": "X"}, ${empties(size / 10)}}}`,
  ],
  // many tags, each llama-box's block with its surplus brace
  [
    'held: many tags read',
    (size) =>
      '<tool_call>\n{"name":"get_temperature","function_call":{"args":{"location":"SZ"},"kwargs{":{}},"name":"get_temperature"}}\n</tool_call>\n'.repeat(
        size / 120,
      ),
  ],
  // one held object with a long value
  [
    'held: a long value',
    (size) =>
      `<tool_call>{"name": "get_temperature", "function_call": {"args": {"location": "${'x'.repeat(size)}"}, "kwargs": {}}}</tool_call>`,
  ],
  // a pythonic call list of many triple-quoted arguments: read
  [
    'triple quotes: a pythonic list read',
    (size) =>
      `[${'write_file(path="a", content="""ab"""), '.repeat(size / 40)}write_file(path="a", content="x")]`,
  ],
  // an object the improvised reader reads, a long triple-quoted value: refused at the opener
  [
    'triple quotes: a long value in an object',
    (size) => `{"tool": "write_file", "args": {"path": "a", "content": """${'x" '.repeat(size / 3)}"""}}`,
  ],
  // Hermes' tag, the same: the unescaped-quotes reading refused at the string's first quote
  [
    'triple quotes: a long value in a tag',
    (size) =>
      `<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": """${'x" '.repeat(size / 3)}"""}}</tool_call>`,
  ],
  // a single-quoted dict of many adjacent strings: refused in one classify pass
  [
    'adjacent strings in a single-quoted dict',
    (size) => `{'name': 'write_file', 'arguments': {'path': 'a', 'content': ${"'a' ".repeat(size / 4)}}}`,
  ],
  // many Python-style calls, each refused at a triple-quoted dict value
  [
    'triple quotes: many refused calls',
    (size) => `{"tool": "write_file", "args": {"path": "a", "content": """x"""}}\n`.repeat(size / 66),
  ],
];

describe('recall22 readings: output length x1 vs x4', () => {
  for (const [what, make] of ROWS)
    it(what, () => {
      budget(`recall22 ${what}`, (size) => make(size), pushed64(tools), { from: 2000, max: 256_000 }, 22_101);
    }, 120_000);

  it('a soup of their pieces', () => {
    budget(
      'recall22 soup',
      (size, rnd) =>
        soup(rnd, size, [
          '<tool_call>',
          '</tool_call>',
          '{"name": "get_temperature", ',
          '"function_call": {',
          '"args": {"location": "X"}',
          ', "kwargs{": {}',
          '}',
          '"""',
          "'''",
          '"content": ',
          "{'name': 'write_file', 'arguments': {'path': 'a', ",
          "'a' 'b'",
          '[write_file(path="a", content="""x""")]',
          '\n',
        ]),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      22_102,
    );
  }, 120_000);
});
