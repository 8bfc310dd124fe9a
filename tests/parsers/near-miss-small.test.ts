/**
 * Small models' near misses (tests/fixtures/parsers/near-miss-small.json, whose calls and content
 * the conformance suite checks): each new reading names its repair, and every case of the file
 * streamed in random splits (and with the token limit cutting it) reads as it does whole.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collectEvents, createRecoveryStream } from '../../parsers/recover.js';
import { splitAt } from '../policies/helpers.js';
import { assertRandomSplits, chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';
import { loadFixtures, optionsFor } from './fixtures.js';

const readFile = {
  name: 'read_file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};
const tools = toolsOf(readFile, {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});
const CALL = '{"name": "read_file", "arguments": {"path": "a"}}';

function read(text: string) {
  const r = whole(text, options(tools));
  const s = streamed(chunks(text, 1), options(tools));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}

describe('small-model near misses: the repair each reading names', () => {
  const shapes: [string, string, string[][]][] = [
    ['functions. prefix', '{"name": "functions.read_file", "arguments": {"path": "a"}}', [['name-prefix']]],
    [
      'another case',
      `<tool_call>{"name": "Read_File", "arguments": {"path": "a"}}</tool_call>`,
      [['name-case']],
    ],
    ['GLM name then JSON', '<tool_call>read_file\n{"path": "a"}\n</tool_call>', [['json-arguments']]],
    ['a mistyped closing tag', `<tool_call>\n${CALL}\n</tool_calls>`, [['mismatched-close-tag']]],
    ['the opening tag written again', `<tool_call>\n${CALL}\n<tool_call>`, [['mismatched-close-tag']]],
    ['two objects on their own lines', `<tool_call>\n${CALL}\n${CALL}\n</tool_call>`, [[], []]],
    [
      'a fence the end of output left open',
      `\`\`\`\n<tool_call>\n${CALL}\n</tool_call>`,
      [['code-fence', 'unclosed-envelope']],
    ],
  ];
  for (const [what, text, repairs] of shapes) {
    it(what, () => {
      const r = read(text);
      expect(r.calls.map((c) => c.repairs)).toEqual(repairs);
      expect(r.content).toBeNull();
    });
  }

  it('a sample in code, a quote or a comment leaves no leak record and no call', () => {
    for (const text of [
      `Write \`<tool_call>${CALL}</tool_call>\` to call it.`,
      `Example:\n\`\`\`\n<tool_call>${CALL}</tool_call>\n\`\`\`\nThat is all.`,
      `You sent:\n> <tool_call>${CALL}</tool_call>\n`,
      `<!-- <tool_call>${CALL}</tool_call> -->`,
    ]) {
      const r = read(text);
      expect(r.calls).toEqual([]);
      expect(r.content).toBe(text);
    }
  });

  it('an echoed tool definition is rejected with its reason', () => {
    const r = read(
      JSON.stringify({ type: 'function', function: { name: 'read_file', parameters: readFile.parameters } }),
    );
    expect(r.calls).toEqual([]);
    expect(r.leaks.map((l) => [l.outcome, l.reason])).toEqual([
      ['rejected', 'arguments are a JSON Schema (tool definition echoed)'],
    ]);
  });
});

describe('near-miss-small.json: random splits equal the whole, with and without a token-limit cut', () => {
  const cases = loadFixtures().find((f) => f.file === 'near-miss-small')?.cases ?? [];
  it('has its cases', () => {
    expect(cases.length).toBeGreaterThan(100);
  });
  it('ended by the model', () => {
    assertRandomSplits(
      cases.length,
      (k) => ({ text: cases[k]!.text, opts: () => optionsFor(cases[k]!) }),
      4401,
    );
  });

  it('cut by the token limit (finish reason length)', () => {
    const run = (c: (typeof cases)[number], pieces: string[]) => {
      const s = createRecoveryStream(optionsFor(c));
      const events = [];
      for (const p of pieces) events.push(...s.push({ content: p }));
      events.push(...s.finish({ cut: true }));
      return view(collectEvents(events, s));
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: cases.length - 1 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (k, cuts) => {
          const c = cases[k]!;
          const pieces = splitAt(
            c.text,
            cuts.map((x) => x % (c.text.length + 1)),
          );
          expect(run(c, pieces)).toEqual(run(c, [c.text]));
        },
      ),
      { numRuns: 300, seed: 4402 },
    );
  });
});
