/**
 * Output x1 vs x4 costs at most about x4 for the readings recall22 changed: arguments held in an
 * object beside empty ones (`parsers/kit/structured-reader.ts` heldArgs: one pass over the
 * holder's keys, tried once per holder that does not fit), and triple-quoted strings refused
 * outside Python (`parsers/kit/python-literal.ts` at the opener; `parsers/kit/lenient-json.ts`
 * escapeStrayQuotes at the string's first quote, classify at a string after a string); and
 * wild19's three readings: a single-quoted name in MiniMax-M2.7's `[TOOL_CALL]` (bracket-arrow),
 * Nemotron's list closed by an orphan `</TOOLCALL>` (improvised), MiniMax-M3's first parameter
 * without its opening tag (minimax-m3 elidedOpen: one namespace-token search per invoke). Many
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
const one = (name: string, key: string): DeclaredTool => ({
  name,
  parameters: { type: 'object', properties: { [key]: { type: 'string' } }, required: [key] },
});
const SAVE: DeclaredTool = {
  name: 'save_file',
  parameters: {
    type: 'object',
    properties: { filename: { type: 'string' }, content: { type: 'string' } },
    required: ['filename', 'content'],
  },
};
const tools = toolsOf(TEMPERATURE, WRITE_FILE, one('exec', 'command'), one('get_weather', 'location'), SAVE);
const NS = ']<]minimax[>[';
const elided = (value: string) =>
  `${NS}<invoke name="save_file">${NS}${value}${NS}</filename>${NS}<content>x${NS}</content>${NS}</invoke>`;
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
  // MiniMax-M2.7's [TOOL_CALL] blocks with a single-quoted name, many read
  [
    "bracket-arrow: many 'NAME' blocks read",
    (size) => `[TOOL_CALL] {tool => 'exec', args => {--command "x"}} [/TOOL_CALL]\n`.repeat(size / 64),
  ],
  // a long single-quoted name, refused
  [
    "bracket-arrow: a long 'NAME'",
    (size) => `[TOOL_CALL] {tool => '${'e'.repeat(size)}', args => {--command "x"}} [/TOOL_CALL]`,
  ],
  // Nemotron's list of many calls closed by an orphan </TOOLCALL>
  [
    'orphan </TOOLCALL>: a long list',
    (size) =>
      `[${'{"name": "get_weather", "arguments": {"location": "NYC"}}, '.repeat(size / 60)}{"name": "get_weather", "arguments": {"location": "X"}}]</TOOLCALL>`,
  ],
  // MiniMax-M3 invokes whose first parameter lost its opener, many in one block
  [
    'M3 elided first parameter: many invokes',
    (size) => `${NS}<tool_call>${elided('a.txt').repeat(size / 120)}${NS}</tool_call>`,
  ],
  // one invoke, a long elided value
  [
    'M3 elided first parameter: a long value',
    (size) => `${NS}<tool_call>${elided('x'.repeat(size))}${NS}</tool_call>`,
  ],
  // many blocks each refused (the closer names a parameter the tool lacks)
  [
    'M3 elided first parameter: many refused blocks',
    (size) =>
      `${NS}<tool_call>${NS}<invoke name="save_file">${NS}a${NS}</path>${NS}</invoke>${NS}</tool_call>\n`.repeat(
        size / 110,
      ),
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
