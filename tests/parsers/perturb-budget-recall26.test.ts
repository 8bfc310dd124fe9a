/**
 * Output x1 vs x4 costs at most about x4 for the reading recall26 added: a call fence on one line
 * whose body is code (`parsers/formats/improvised.ts` fenceBody with CODE_ONE_LINE: one anchored
 * match at each one-line fence's start, then the body read once by the schema-guided reader). A
 * long argument, a long run of blanks after the label, many one-line fences in a row (read, and
 * refused at the last), a label glued to a long word, and a soup of the pieces stay linear,
 * pushed 64 characters at a time (the family reads the whole output at its end).
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const S = { type: 'string' };
const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { location: S, days: { type: 'integer' } },
    required: ['location'],
  },
};
const tools = toolsOf(WEATHER);
const FENCE = (body: string) => `\`\`\`tool_code${body}\`\`\``;
const CALL = 'print(default_api.get_weather(location="Paris"))';

const ROWS: [string, (size: number) => string][] = [
  [
    'a long argument, read',
    (size) => FENCE(`print(default_api.get_weather(location="${'p'.repeat(size)}"))`),
  ],
  [
    'a long run of blanks after the label',
    (size) => FENCE(`${' '.repeat(size)}get_weather(location="Paris")`),
  ],
  ['many one-line fences, read', (size) => `${FENCE(CALL)}\n`.repeat(size / 70)],
  [
    'many one-line fences, the last undeclared',
    (size) => `${`${FENCE(CALL)}\n`.repeat(size / 70)}${FENCE('print(default_api.nope())')}`,
  ],
  ['a label glued to a long word', (size) => FENCE(`${'print'.repeat(size / 5)}(default_api.get_weather())`)],
  ['a long namespace chain', (size) => FENCE(`default_api.${'default_api.'.repeat(size / 12)}get_weather()`)],
];

describe('recall26 reading: output length x1 vs x4', () => {
  for (const [what, make] of ROWS)
    it(what, () => {
      budget(`recall26 ${what}`, (size) => make(size), pushed64(tools), { from: 2000, max: 256_000 }, 26_101);
    }, 120_000);

  it('a soup of its pieces', () => {
    budget(
      'recall26 soup',
      (size, rnd) =>
        soup(
          rnd,
          size,
          [
            '```',
            'tool_code',
            'python',
            ' ',
            'print(',
            'default_api.',
            'get_weather(',
            'location="P"',
            ')',
            '\n',
          ],
          0.3,
          '```tool_code',
        ),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      26_102,
    );
  }, 120_000);
});
