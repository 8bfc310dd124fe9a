/**
 * sessions19: Qwen3-Coder functions inside a closed `<tool_call>` that also holds other text are
 * read (repair `text-in-wrapper`), the text content; streaming equals the whole text, and the
 * reading costs at most about 4x for 4x the input. Conformance cases with streaming = whole at
 * every split: tests/fixtures/parsers/qwen3-coder.json ("... inside the wrapper").
 */
import { describe, expect, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const tools = toolsOf({ name: 't', parameters: { type: 'object', properties: { p: { type: 'number' } } } });
const FN = '<function=t>\n<parameter=p>\n7\n</parameter>\n</function>\n';

function readBoth(text: string) {
  const r = whole(text, options(tools));
  const s = streamed(chunks(text, 1), options(tools));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}

describe('functions beside other text inside <tool_call>', () => {
  it('the call, the text as content, the repair named', () => {
    const r = readBoth(`<tool_call>\n${FN}Done.\n</tool_call>`);
    expect(r.calls.map((c) => [c.name, c.arguments, c.repairs])).toEqual([
      ['t', '{"p":7}', ['text-in-wrapper']],
    ]);
    expect(r.content).toBe('Done.');
    expect(r.leaks.map((l) => l.outcome)).toEqual(['recovered']);
  });

  it('text holding tool-call markup, or arguments that do not fit, leave the wrapper as before', () => {
    for (const text of [
      `<tool_call>\n${FN}<parameter=p>\n8\n</parameter>\n</tool_call>`,
      `<tool_call>\n${FN.replace('7', '"seven"')}Done.\n</tool_call>`,
    ]) {
      const r = readBoth(text);
      expect(
        r.calls.every((c) => !c.repairs?.includes('text-in-wrapper')),
        text,
      ).toBe(true);
      expect(
        r.leaks.some((l) => l.outcome !== 'recovered'),
        text,
      ).toBe(true);
    }
  });

  for (const [what, make] of [
    [
      'a soup of wrappers, functions and text',
      (size: number, rnd: () => number) =>
        soup(rnd, size, [
          '<tool_call>\n',
          '</tool_call>',
          FN,
          'Some text.\n',
          '<function=',
          '</function>',
          '\n',
        ]),
    ],
    [
      'one wrapper of many functions with text between',
      (size: number) => `<tool_call>\n${`${FN}and\n`.repeat(Math.ceil(size / (FN.length + 4)))}</tool_call>`,
    ],
  ] as const) {
    it(`costs at most about 4x for 4x the output (${what})`, () => {
      budget(
        `text in wrapper, ${what}`,
        make,
        (text) => streamed(chunks(text, 64), options(tools)),
        { from: 2000, max: 256_000 },
        3190,
      );
    }, 120_000);
  }
});
