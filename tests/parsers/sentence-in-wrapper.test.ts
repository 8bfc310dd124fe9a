/**
 * recall20: a short announcing sentence inside `<tool_call>` before the call, Hermes' JSON or
 * Qwen3-Coder's first `<function=`, is read (repair `text-in-wrapper`), the sentence content; an
 * explaining or questioning sentence, text after Hermes' JSON, an undeclared tool or arguments
 * that do not fit leave it as before. Streaming equals the whole text at any chunking; the reading
 * costs at most about 4x for 4x the output. Conformance cases with streaming = whole at every
 * split: tests/fixtures/parsers/hermes-text-in-wrapper.json, qwen3-coder-text-in-wrapper.json.
 * End to end: tests/server/sentence-in-wrapper.test.ts.
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
const fn = (city: string) => `<function=get_weather>\n<parameter=city>\n${city}\n</parameter>\n</function>\n`;

function readAt(text: string, size: number) {
  const r = whole(text, options(tools));
  const s = streamed(chunks(text, size), options(tools));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}

const sentence = fc.constantFrom(
  'Sure.',
  'Let me check the weather.',
  'Checking now:',
  'On it!',
  '我来查询天气。',
  'I will look that up for you.',
);
const bad = fc.constantFrom(
  'For example:',
  'You can call it like this:',
  'Should I check?',
  'e.g.',
  'Here is the format:',
  'Calling get_weather',
);
const anyCity = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== '');
const plainCity = fc.constantFrom('Paris', 'New York', 'São Paulo', '東京');
const size = fc.integer({ min: 1, max: 9 });

describe('a sentence before the call inside <tool_call>', () => {
  it('Hermes: read with the sentence as content, streamed equal to whole (property)', () => {
    fc.assert(
      fc.property(sentence, anyCity, fc.constantFrom('', '\n', ' '), size, (s, c, gap, n) => {
        const r = readAt(`<tool_call>${gap}${s}${gap}${json(c)}${gap}</tool_call>`, n);
        expect(r.calls.map((k) => [k.name, JSON.parse(k.arguments), k.repairs])).toEqual([
          ['get_weather', { city: c }, ['text-in-wrapper']],
        ]);
        expect(r.content).toBe(s);
      }),
      { numRuns: 200, seed: 2021 },
    );
  });

  it('Qwen3-Coder: read with the sentence as content, streamed equal to whole (property)', () => {
    fc.assert(
      fc.property(sentence, plainCity, fc.constantFrom('', '\n'), size, (s, c, gap, n) => {
        const r = readAt(`<tool_call>${gap}${s}\n${fn(c)}</tool_call>`, n);
        expect(r.calls.map((k) => [k.name, JSON.parse(k.arguments), k.repairs])).toEqual([
          ['get_weather', { city: c }, ['text-in-wrapper']],
        ]);
        expect(r.content).toBe(s);
      }),
      { numRuns: 100, seed: 2023 },
    );
  });

  it('Hermes: text after an explaining sentence or a question, or with text after the JSON (property)', () => {
    const lead = fc.oneof(
      bad.map((s) => [s, ''] as const),
      sentence.map((s) => [s, ' Done.'] as const),
    );
    fc.assert(
      fc.property(lead, anyCity, size, ([s, after], c, n) => {
        const text = `<tool_call>${s} ${json(c)}${after}</tool_call>`;
        const r = readAt(text, n);
        expect(r.calls).toEqual([]);
        expect(r.content).toBe(text);
      }),
      { numRuns: 200, seed: 2022 },
    );
  });

  it('Qwen3-Coder: after an explaining sentence or a question the wrapper reads as before (property)', () => {
    fc.assert(
      fc.property(bad, size, (s, n) => {
        const r = readAt(`<tool_call>${s}\n${fn('Paris')}</tool_call>`, n);
        // the bare function is read as before; the wrapper's opening tag and the text stay content
        expect(r.calls.every((k) => !k.repairs?.includes('text-in-wrapper'))).toBe(true);
        expect(r.content).toBe(`<tool_call>${s}`);
      }),
      { numRuns: 60, seed: 2024 },
    );
  });

  for (const [what, make] of [
    [
      'Hermes: one tag, a long argument',
      (n: number) => `<tool_call>Sure. ${json('x'.repeat(n))}</tool_call>`,
    ],
    [
      'Hermes: many tags, each a sentence and an object never closed',
      (n: number) => `<tool_call>Sure. {"name": "get_weather", `.repeat(Math.ceil(n / 40)),
    ],
    [
      'Qwen3-Coder: many wrappers, each a sentence and a function never closed',
      (n: number) =>
        '<tool_call>Sure.\n<function=get_weather>\n<parameter=city>\nP'.repeat(Math.ceil(n / 60)),
    ],
    [
      'Qwen3-Coder: a sentence then many functions in one wrapper',
      (n: number) => `<tool_call>Sure.\n${fn('P').repeat(Math.ceil(n / 70))}</tool_call>`,
    ],
    [
      'a soup of tags, sentences, brackets and calls',
      (n: number, rnd: () => number) =>
        soup(rnd, n, [
          '<tool_call>',
          '</tool_call>',
          'Sure. ',
          json('P'),
          fn('P'),
          '<function=',
          '{',
          '[',
          ' word',
          '\n',
        ]),
    ],
  ] as const) {
    it(`costs at most about 4x for 4x the output (${what})`, () => {
      budget(
        `sentence in wrapper, ${what}`,
        make,
        (text) => streamed(chunks(text, 64), options(tools)),
        { from: 2000, max: 256_000 },
        2021,
      );
    }, 120_000);
  }
});
