/**
 * Output x1 vs x4 costs at most about x4 for the readings recall23 changed (wild20): an envelope
 * the output ended inside before any argument checked against the schema (`parsers/engine/engine.ts`,
 * once per call),
 * Qwen3-Coder arguments written as attributes (`parsers/formats/qwen3-coder.ts`
 * attributeArguments: one sticky-regex pass over the body), and DSML's token on an element named
 * after the tool (`parsers/formats/improvised.ts` dsmlToolTag: one indexOf, then the element
 * reader). Many pairs, long values, many calls read or refused, and a soup of the pieces stay
 * linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const WEBSEARCH: DeclaredTool = {
  name: 'websearch',
  parameters: {
    type: 'object',
    properties: { query: { type: 'string' }, numResults: { type: 'number' }, live: { type: 'boolean' } },
    required: ['query'],
  },
};
const READ: DeclaredTool = {
  name: 'Read',
  parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
};
const AIO: DeclaredTool = {
  name: 'aio-webcontent',
  parameters: {
    type: 'object',
    properties: { url: { type: 'string' }, budgetTokens: { type: 'number' }, query: { type: 'string' } },
    required: ['url'],
  },
};
const tools = toolsOf(WEBSEARCH, READ, AIO);
const fn = (body: string) => `<tool_call>\n<function=websearch>\n${body}\n</function>\n</tool_call>\n`;
const dsml = (inner: string) => `<｜DSML｜aio-webcontent>\n${inner}\n</｜DSML｜aio-webcontent>`;

const ROWS: [string, (size: number) => string][] = [
  // an unclosed Qwen3-Coder envelope, a long value that fits: read
  [
    'unclosed envelope: a long value read',
    (size) =>
      `<tool_call>\n<function=Read>\n<parameter=file_path>\n${'a'.repeat(size)}\n</parameter>\n</function>`,
  ],
  // a long sentence, then an unclosed envelope with no argument: refused after one schema check
  [
    'unclosed envelope: no argument after a long sentence',
    (size) => `${'Let me read that file. '.repeat(size / 23)}\n\n<tool_call>\n<function=Read>\n</function>`,
  ],
  // many closed blocks, then one unclosed that does not fit
  [
    'unclosed envelope: many calls then a refused one',
    (size) =>
      `${'<tool_call>\n<function=Read>\n<parameter=file_path>\na\n</parameter>\n</function>\n</tool_call>\n'.repeat(size / 90)}<tool_call>\n<function=Read>\n</function>`,
  ],
  // attributes: a long quoted value, read
  ['attributes: a long quoted value', (size) => fn(`query="${'q '.repeat(size / 2)}" numResults=5`)],
  // attributes: many pairs, refused at the second key (a key twice)
  ['attributes: many pairs refused', (size) => fn(`query="x" ${'numResults=5 '.repeat(size / 13)}`)],
  // attributes: many blocks each read
  ['attributes: many blocks read', (size) => fn('query="x" numResults=5 live=true').repeat(size / 90)],
  // attributes: a long bare word for a string, refused
  ['attributes: a long bare string', (size) => fn(`query=${'x'.repeat(size)}`)],
  // attributes unclosed by the end of output, a long value
  [
    'attributes: unclosed, a long value',
    (size) => `Checking.\n\n<tool_call>\n<function=websearch>\nquery="${'w '.repeat(size / 2)}" numResults=5`,
  ],
  // DSML element: a long child value, read
  ['DSML tag: a long value', (size) => dsml(` <url>${'u'.repeat(size)}</url>`)],
  // DSML element: many children, refused (a key twice is no object)
  ['DSML tag: many children', (size) => dsml(' <query>x</query>\n'.repeat(size / 19))],
  // DSML element: a long undeclared name
  [
    'DSML tag: a long undeclared name',
    (size) => `<｜DSML｜${'n'.repeat(size)}>\n <url>x</url>\n</｜DSML｜n>`,
  ],
  // DSML element: the closer never comes
  ['DSML tag: unclosed', (size) => `<｜DSML｜aio-webcontent>\n${' <url>x</url>\n'.repeat(size / 15)}`],
];

describe('recall23 readings: output length x1 vs x4', () => {
  for (const [what, make] of ROWS)
    it(what, () => {
      budget(`recall23 ${what}`, (size) => make(size), pushed64(tools), { from: 2000, max: 256_000 }, 23_101);
    }, 120_000);

  it('a soup of their pieces', () => {
    budget(
      'recall23 soup',
      (size, rnd) =>
        soup(rnd, size, [
          '<tool_call>\n',
          '<function=websearch>\n',
          '<function=Read>\n',
          'query="x" ',
          'numResults=5 ',
          'live=true',
          '</function>\n',
          '</tool_call>\n',
          '<｜DSML｜aio-webcontent>\n',
          ' <url>x</url>\n',
          '</｜DSML｜aio-webcontent>',
          '"',
          '\n',
        ]),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      23_102,
    );
  }, 120_000);
});
