/**
 * recall20: a short announcing sentence before the JSON call inside Hermes' `<tool_call>` is read
 * (repair `text-in-wrapper`), the sentence content; an explaining or questioning sentence, text
 * after the JSON, an undeclared tool or arguments that do not fit leave the tag text. Streaming
 * equals the whole text at any chunking; the reading costs at most about 4x for 4x the output.
 * Conformance cases with streaming = whole at every split:
 * tests/fixtures/parsers/hermes-text-in-wrapper.json. End to end: tests/server/hermes-sentence-in-tag.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});
const json = (city: string) => JSON.stringify({ name: 'get_weather', arguments: { city } });

function readAt(text: string, size: number) {
  const r = whole(text, options(tools));
  const s = streamed(chunks(text, size), options(tools));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}

describe('a sentence before the JSON call inside <tool_call>', () => {
  const sentence = fc.constantFrom(
    'Sure.',
    'Let me check the weather.',
    'Checking now:',
    'On it!',
    '我来查询天气。',
    'I will look that up for you.',
  );
  const city = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== '');

  it('is read with the sentence as content, streamed equal to whole (property)', () => {
    fc.assert(
      fc.property(
        sentence,
        city,
        fc.constantFrom('', '\n', ' '),
        fc.integer({ min: 1, max: 9 }),
        (s, c, gap, size) => {
          const text = `<tool_call>${gap}${s}${gap}${json(c)}${gap}</tool_call>`;
          const r = readAt(text, size);
          expect(r.calls.map((k) => [k.name, JSON.parse(k.arguments), k.repairs])).toEqual([
            ['get_weather', { city: c }, ['text-in-wrapper']],
          ]);
          expect(r.content).toBe(s);
        },
      ),
      { numRuns: 200, seed: 2021 },
    );
  });

  it('stays text after an explaining sentence or a question, or with text after the JSON (property)', () => {
    const bad = fc.constantFrom(
      'For example:',
      'You can call it like this:',
      'Should I check?',
      'e.g.',
      'Here is the format:',
      'Calling get_weather',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          bad.map((s) => [s, ''] as const),
          sentence.map((s) => [s, ' Done.'] as const),
        ),
        city,
        fc.integer({ min: 1, max: 9 }),
        ([s, after], c, size) => {
          const text = `<tool_call>${s} ${json(c)}${after}</tool_call>`;
          const r = readAt(text, size);
          expect(r.calls).toEqual([]);
          expect(r.content).toBe(text);
        },
      ),
      { numRuns: 200, seed: 2022 },
    );
  });

  for (const [what, make] of [
    [
      'one tag, a long argument after the sentence',
      (size: number) => `<tool_call>Sure. ${json('x'.repeat(size))}</tool_call>`,
    ],
    [
      'many tags, each a sentence and an object never closed',
      (size: number) => `<tool_call>Sure. {"name": "get_weather", `.repeat(Math.ceil(size / 40)),
    ],
    [
      'a soup of tags, sentences, brackets and calls',
      (size: number, rnd: () => number) =>
        soup(rnd, size, ['<tool_call>', '</tool_call>', 'Sure. ', json('P'), '{', '[', ' word', '\n']),
    ],
  ] as const) {
    it(`costs at most about 4x for 4x the output (${what})`, () => {
      budget(
        `sentence in tag, ${what}`,
        make,
        (text) => streamed(chunks(text, 64), options(tools)),
        { from: 2000, max: 256_000 },
        2021,
      );
    }, 120_000);
  }
});
