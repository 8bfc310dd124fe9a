/**
 * Output x1 vs x4 costs at most about x4 for the readings recall24 added: a reasoning details
 * block opening the output (`parsers/engine/lead-in.ts` detailsEnd: its close searched from where
 * the last push stopped, at most REASONING_DETAILS_MAX code units) and MiniMax-M2's invokes
 * without their brackets (`parsers/formats/improvised.ts` bracketlessInvokes: one walk, each
 * value's closer found by one indexOf from the value's start), and a Qwen3-Coder block opened by
 * an element named after the tool (`parsers/formats/qwen3-coder.ts` elementForFunction: one
 * memoised search for `>` and one for `</tool_call>`, then the function reader). Long blocks, many false closes,
 * long values, many invokes read or refused, pushed 64 and 1 character at a time, and a soup of
 * the pieces stay linear.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { createRecoveryStream } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const S = { type: 'string' };
const BASH: DeclaredTool = {
  name: 'bash',
  parameters: { type: 'object', properties: { command: S }, required: ['command'] },
};
const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { location: S, days: { type: 'integer' } },
    required: ['location'],
  },
};
const READ: DeclaredTool = {
  name: 'read',
  parameters: {
    type: 'object',
    properties: { filePath: S, offset: { type: 'number' } },
    required: ['filePath'],
  },
};
const tools = toolsOf(BASH, WEATHER, READ);
const element = (value: string) =>
  `<tool_call>\n<read>\n<parameter=filePath>\n${value}\n</parameter>\n</function>\n</tool_call>\n`;
const CALL = 'bash(command="ls")';
const OPEN = '<details type="reasoning" done="true" duration="3">\n';
const invoke = (value: string) =>
  `invoke name="get_weather">\nparameter name="location">${value}parameter>\ninvoke>\n`;

/** The stream pushed one character at a time (the details walk runs on every push). */
function pushed1(text: string) {
  let n = 0;
  const s = createRecoveryStream({ tools, newId: () => `c${n++}` });
  const events = [];
  for (const ch of text) events.push(...s.push({ content: ch }));
  events.push(...s.finish());
  return events;
}

const ROWS: [string, (size: number) => string][] = [
  // a long block, then a call: read while under the cap, text past it
  [
    'details: a long block then a call',
    (size) => `${OPEN}${'> thinking\n'.repeat(size / 11)}</details>\n${CALL}`,
  ],
  // many closes that end no line inside the block
  [
    'details: many false closes',
    (size) => `${OPEN}${'> a </details> b\n'.repeat(size / 17)}</details>\n${CALL}`,
  ],
  // a block never closed
  ['details: unclosed', (size) => `${OPEN}${'> x\n'.repeat(size / 4)}`],
  // the lone close, then a long call
  ['details: lone close, a long argument', (size) => `</details>\nbash(command="${'l'.repeat(size)}")`],
  // the lone close, then a long lead-in past the preface cap
  ['details: lone close, long prose', (size) => `</details>\n${'Let me look. '.repeat(size / 13)}\n${CALL}`],
  // bracketless: a long value, read
  ['bracketless: a long value', (size) => invoke('P'.repeat(size))],
  // bracketless: many invokes, read
  ['bracketless: many invokes read', (size) => invoke('Paris').repeat(size / 80)],
  // bracketless: many invokes, the last refused (an undeclared tool)
  [
    'bracketless: many invokes, the last undeclared',
    (size) => `${invoke('Paris').repeat(size / 80)}invoke name="nope">\ninvoke>`,
  ],
  // bracketless: a value full of `parameter` words, no closer that ends a line
  ['bracketless: many closers mid-line', (size) => invoke(`${'parameter> '.repeat(size / 11)}x`)],
  // an element named after the tool where <function=NAME> belongs: a long value, read
  ['element: a long value', (size) => element('f'.repeat(size))],
  // many such blocks, read
  ['element: many blocks read', (size) => element('a.java').repeat(size / 90)],
  // many blocks opened by an undeclared element, refused
  [
    'element: many undeclared',
    (size) =>
      element('a.java')
        .replaceAll('<read>', '<view>')
        .repeat(size / 90),
  ],
  // a long tag name that never closes, and many short ones
  ['element: a long unclosed tag', (size) => `<tool_call>\n<${'r'.repeat(size)}`],
  ['element: many unclosed tags', (size) => '<tool_call>\n<read'.repeat(size / 16)],
  // bracketless: a long value never closed
  [
    'bracketless: unclosed value',
    (size) => `invoke name="get_weather">\nparameter name="location">${'v'.repeat(size)}`,
  ],
];

describe('recall24 readings: output length x1 vs x4', () => {
  for (const [what, make] of ROWS)
    it(what, () => {
      budget(`recall24 ${what}`, (size) => make(size), pushed64(tools), { from: 2000, max: 256_000 }, 24_101);
    }, 120_000);

  for (const [what, make] of ROWS.slice(0, 3))
    it(`${what}, pushed a character at a time`, () => {
      budget(`recall24 ${what} (1 char)`, (size) => make(size), pushed1, { from: 1000, max: 64_000 }, 24_102);
    }, 120_000);

  it('a soup of their pieces', () => {
    budget(
      'recall24 soup',
      (size, rnd) =>
        soup(rnd, size, [
          OPEN,
          '<details type="reasoning"',
          '</details>',
          '\n',
          '> x',
          CALL,
          'invoke name="get_weather">',
          'parameter name="location">',
          'Paris',
          'parameter>',
          'invoke>',
          '<tool_call>\n',
          '<read>\n',
          '<parameter=filePath>\n',
          '</parameter>\n',
          '</function>\n',
          '</tool_call>\n',
          '"',
          '<',
        ]),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      24_103,
    );
  }, 120_000);
});
