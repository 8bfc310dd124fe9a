/**
 * Output x1 vs x4 costs at most about x4 for the readings recall21 changed: a Kimi K2 call block
 * without its `<|tool_call_argument_begin|>` (`parsers/formats/kimi-k2.ts` readWithoutSep: one
 * anchored id pattern, one JSON scan, one parse and one schema check per closed block) and the
 * block loop it joins (`parsers/kit/envelope.ts` sectionOrLoneCall: the block's close found once
 * per block). Many blocks, long arguments, long ids, blanks, objects that never close, and blocks
 * refused one after another stay linear. And adjacent string literals (`parsers/kit/python-literal.ts`:
 * joined only in a pythonic call list, a blank between, refused at the first elsewhere): many
 * strings joined, many refused, many touching quotes, many refused calls. And quotes left unescaped
 * in a bare JSON call (`parsers/formats/json.ts`): a long value, comma-quote runs, an odd count.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { pushed64, READ_FILE, toolsOf, WRITE_FILE } from './engine-helpers.js';

const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const tools = toolsOf(READ_FILE, WRITE_FILE, WEATHER);
const OPEN = '<|tool_call_begin|>';
const CLOSE = '<|tool_call_end|>';
const SECTION = (body: string) => `<|tool_calls_section_begin|>${body}<|tool_calls_section_end|>`;

const SHAPES: [string, (size: number) => string][] = [
  // one block, a long value
  [
    'one block, a long value',
    (size) =>
      `${OPEN} functions.write_file:0 {"path": "a", "content": "${'x{\\"'.repeat(size / 4)}"} ${CLOSE}`,
  ],
  // many blocks in one section, all read
  [
    'many blocks read',
    (size) => SECTION(`${OPEN}functions.read_file:0 {"path": "a"}${CLOSE}`.repeat(size / 52)),
  ],
  // many blocks in one section, each refused (a key the tool lacks): the fallback reads each alone
  [
    'many blocks refused',
    (size) => SECTION(`${OPEN}functions.read_file:0 {"mode": "a"}${CLOSE}`.repeat(size / 52)),
  ],
  // a long id and long blanks
  [
    'a long id, long blanks',
    (size) => `${OPEN}functions.${'a'.repeat(size / 2)}:0${' '.repeat(size / 2)}{"city": "x"}${CLOSE}`,
  ],
  // an object that never closes before the block's end
  [
    'an object never closed',
    (size) => `${OPEN}functions.get_weather:0 {"city": [${'['.repeat(size / 2)}${CLOSE}`,
  ],
  // many lone blocks back to back, prose between
  ['many lone blocks', (size) => `ok ${OPEN}get_weather:1 {"city": "Oslo"}${CLOSE}\n`.repeat(size / 48)],
];

/** Adjacent string literals (`parsers/kit/python-literal.ts`): joined, or refused at the first. */
const STRINGS: [string, (size: number) => string][] = [
  // a pythonic call whose argument is many strings a blank apart: joined
  ['pythonic, many strings joined', (size) => `[write_file(path="a", content=${'"ab" '.repeat(size / 5)})]`],
  // the same in an object the improvised reader reads: refused
  [
    'improvised, many strings a blank apart',
    (size) => `{"tool": "write_file", "args": {"path": "a", "content": ${'"ab" '.repeat(size / 5)}}}`,
  ],
  // one value of many touching quotes
  [
    'improvised, many touching quotes',
    (size) => `{"tool": "write_file", "args": {"path": "a", "content": "${'a""'.repeat(size / 3)}"}}`,
  ],
  // many calls back to back, each refused at its value
  ['improvised, many refused calls', (size) => 'write_file(path="a", content="x" "y")\n'.repeat(size / 38)],
];

/** Quotes left unescaped in a bare JSON call (`parsers/formats/json.ts`, recall20's escapeStrayQuotes). */
const BARE: [string, (size: number) => string][] = [
  // one long value of quoted words
  [
    'one long value of quoted words',
    (size) =>
      `{"name": "write_file", "arguments": {"path": "a", "content": "${'say "hi" '.repeat(size / 9)}"}}`,
  ],
  // comma-quote runs, each looking ahead for a key
  [
    'comma-quote runs',
    (size) => `{"name": "write_file", "arguments": {"path": "a", "content": "${'a", "b'.repeat(size / 6)}"}}`,
  ],
  // an odd count, refused after the scan
  [
    'an odd count of quotes',
    (size) => `{"name": "write_file", "arguments": {"path": "a", "content": "${'x"'.repeat(size / 2 + 1)}"}}`,
  ],
];

describe('recall21 readings: output length x1 vs x4', () => {
  for (const [what, make] of BARE)
    it(`unescaped quotes in a bare JSON call: ${what}`, () => {
      budget(
        `recall21 bare JSON unescaped quotes, ${what}`,
        (size) => make(size),
        pushed64(tools),
        { from: 2000, max: 256_000 },
        21_004,
      );
    }, 120_000);

  for (const [what, make] of STRINGS)
    it(`adjacent string literals: ${what}`, () => {
      budget(
        `recall21 adjacent strings, ${what}`,
        (size) => make(size),
        pushed64(tools),
        { from: 2000, max: 256_000 },
        21_003,
      );
    }, 120_000);

  for (const [what, make] of SHAPES)
    it(`Kimi K2 blocks without their argument marker: ${what}`, () => {
      budget(
        `recall21 kimi without argument marker, ${what}`,
        (size) => make(size),
        pushed64(tools),
        { from: 2000, max: 256_000 },
        21_001,
      );
    }, 120_000);

  it('Kimi K2 blocks without their argument marker: a soup of their pieces', () => {
    budget(
      'recall21 kimi without argument marker, soup',
      (size, rnd) =>
        soup(
          rnd,
          size,
          [
            OPEN,
            CLOSE,
            'functions.get_weather:0',
            ' {"city": "Tokyo"}',
            '<|tool_call_argument_begin|>',
            '<|tool_calls_section_begin|>',
            '<|tool_calls_section_end|>',
            '{',
            '"',
            ' ',
          ],
          0.3,
        ),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      21_002,
    );
  }, 120_000);
});
