/**
 * decodeFinalAnswer's shortcut for `{"answer":"..."}` (one JSON.parse of the string literal)
 * against the character decoder every other input takes: same text and flags, or the shortcut
 * is wrong. The reference is the decoder path as decodeFinalAnswer runs it without the shortcut.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeByCharacters, decodeFinalAnswer } from '../../policies/force-tool-use/final-answer.js';

const byDecoder = decodeByCharacters;

/** Inputs near the shortcut's edges: cut, doubled keys, escapes, spaces, trailing text. */
const edges = [
  '{"answer":"It is sunny."}',
  '{"answer": "spaced"}',
  '{"answer":   "more spaces"}',
  '{"answer":""}',
  '{"answer":"a\\"b\\\\c\\n\\t"}',
  '{"answer":"cut',
  '{"answer":"cut\\"}',
  '{"answer":"a","answer":"b"}',
  '{"answer":"a","x":"b"}',
  '{"answer":"a" }',
  '{"answer":"\\ud83d\\ude00"}',
  '{"answer":"\\ud800"}',
  '{"answer":"\\u0041"}',
  '{"answer":"a"}}',
  '{"answer":"}',
  '{"answer":1}',
  '{"answer":"x\u0001y"}',
  '{"answer":"caf\u00e9 \u{1f600}"}',
];

describe('decodeFinalAnswer: the plain {"answer":"..."} shortcut', () => {
  it('agrees with the character decoder on edge inputs', () => {
    for (const raw of edges) expect(decodeFinalAnswer(raw), raw).toEqual(byDecoder(raw));
  });

  it('agrees with the character decoder on any answer string, written by JSON.stringify or spaced', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.nat(3), (answer, spaces) => {
        const raw = `{"answer":${' '.repeat(spaces)}${JSON.stringify(answer)}}`;
        const got = decodeFinalAnswer(raw);
        expect(got).toEqual(byDecoder(raw));
        expect(got.text).toBe(answer);
      }),
      { numRuns: 500 },
    );
  });
});
