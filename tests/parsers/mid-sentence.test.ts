/**
 * A complete envelope inside a sentence that explains, the sentence going on after it, is text
 * (parsers/engine/mid-sentence.ts; the cases themselves are in
 * tests/fixtures/parsers/near-miss-small.json, checked by the conformance suite). Here: the
 * sentence rule, which envelopes stay calls, every split deciding as the whole does (blanks
 * included), and x1 vs x4 in cost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { explainsBefore } from '../../parsers/engine/mid-sentence.js';
import { budget, soup } from '../hardening/surface-budget.js';
import { expectSplitEqualsWhole, options, pushed64, toolsOf, whole } from './engine-helpers.js';

const readFile = {
  name: 'read_file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
const tools = toolsOf(readFile);
const opts = () => options(tools);
const CALL = '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>';

describe('the sentence before the envelope', () => {
  it.each([
    ['To do that you would write ', true],
    ['Here is how you call it: ', true],
    ['For example ', true],
    ['The syntax is ', true],
    ['例如 ', true],
    ['I would like to read it ', false],
    ["Let's see, you could ", false],
    ['That would help. ', false],
    ['Checking now. ', false],
    ['Before ', false],
    ['', false],
  ])('%j explains: %s', (line, expected) => {
    expect(explainsBefore(line)).toBe(expected);
  });
});

describe('an envelope inside an explaining sentence', () => {
  it.each([
    [`You would write ${CALL} in your agent.`, 0],
    [`You would write ${CALL}, then more.`, 0],
    [`You would write ${CALL}   (in your agent).`, 0],
    [`You would write ${CALL}.`, 1],
    [`You would write ${CALL}\nin your agent.`, 1],
    [`You would write ${CALL}${CALL} in your agent.`, 2],
    [`You would write ${CALL}${' '.repeat(80)}in your agent.`, 1],
    [`You would write ${CALL}`, 1],
    // a colon hands the explaining sentence to the envelope: the sample it introduces
    [`You could do it like this: ${CALL}`, 0],
    [`You could do it like this:${CALL}\nThat is all.`, 0],
    [`例如：${CALL}`, 0],
    [`I could do it like this: ${CALL}`, 1],
    [`Checking the file now: ${CALL}`, 1],
    [`You could do it like this:\n${CALL}`, 1],
  ])(
    '%j: %i calls (as before but when the sentence goes on or a colon ends it), the rest content byte for byte',
    (text, calls) => {
      const r = whole(text, opts());
      expect(r.calls.length).toBe(calls);
      if (calls === 0) expect(r.content).toBe(text);
      for (let cut = 0; cut <= text.length; cut++) expectSplitEqualsWhole(text, [cut], opts);
    },
  );

  it('any split decides as the whole', () => {
    const units = ['You would write ', 'I will ', CALL, ' ', '  ', 'in it', '.', ', ', '\n', 'a. ', ':'];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...units), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (parts, cuts) => expectSplitEqualsWhole(parts.join(''), cuts, opts),
      ),
      { numRuns: 500, seed: 31 },
    );
  });
});

describe('envelopes inside prose: output length x1 vs x4', () => {
  it('explaining sentences, envelopes and what follows them', () => {
    budget(
      'mid-sentence envelopes',
      (size, rnd) =>
        soup(rnd, size, [
          'To do that you would write ',
          'For example ',
          'prose goes on ',
          CALL,
          ' ',
          '      ',
          'in your agent. ',
          ', which ',
          '\n',
          '. ',
        ]),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      3301,
    );
  }, 120_000);

  it('one long line before an envelope, and long blank runs after it', () => {
    budget(
      'mid-sentence long line',
      (size, rnd) =>
        `${soup(rnd, size, ['you would ', 'write ', 'x', ' '], 0)}${CALL}${' '.repeat(size)}in it.`,
      pushed64(tools),
      { from: 2000, max: 256_000 },
      3302,
    );
  }, 120_000);
});
