/**
 * recall20: a Hermes call whose string argument holds quotes the model did not escape (code,
 * HTML, quoted speech: wild17's four such outputs) is read, repair `unescaped-quotes`, when each
 * such quote cannot end its string (kit/lenient-json.ts escapeStrayQuotes) and the arguments fit
 * the declared schema (SCHEMA_GATED). Anything else stays text byte for byte. Streaming equals the
 * whole text; the reading costs at most about 4x for 4x the output. Conformance cases with
 * streaming = whole at every split: tests/fixtures/parsers/unescaped-quotes.json.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeStrayQuotes } from '../../parsers/kit/lenient-json.js';
import { budget, soup } from '../hardening/surface-budget.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const tools = toolsOf(
  {
    name: 'edit',
    parameters: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
  },
  {
    name: 'write_file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
);

function readBoth(text: string) {
  const r = whole(text, options(tools));
  const s = streamed(chunks(text, 1), options(tools));
  expect(s.calls).toEqual(r.calls);
  expect(s.content).toBe(r.content);
  return r;
}

const call = (args: string, name = 'edit') =>
  `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;

describe('quotes left unescaped inside a string argument', () => {
  it('the call, the repair named, no content', () => {
    const r = readBoth(call('{"content": "He said "hello" to me"}'));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['edit', { content: 'He said "hello" to me' }, ['unescaped-quotes']],
    ]);
    expect(r.content).toBeNull();
  });

  it('a quote that a comma follows, but no next "key":, cannot end the string', () => {
    const r = readBoth(call('{"path": "a.py", "content": "env.get("KEY", "default")"}', 'write_file'));
    expect(r.calls.map((c) => JSON.parse(c.arguments))).toEqual([
      { path: 'a.py', content: 'env.get("KEY", "default")' },
    ]);
  });

  it('stays text when the reading is not the only one, or the arguments do not fit', () => {
    for (const args of [
      '{"content": "echo "hi"}', // odd count: the close eaten, or one quote kept?
      '{"content": "a "b": c"}', // a kept quote before `:` looks like a key
      '{"mood": "x", "content": "He said "hi" there"}', // a key the tool lacks (schema-gated)
      '{"content": "say "hi", "path": "a"}', // `, "path": "a` could be the value's own text
      '{"path": "p", "content": "a "b" c", "path": "q"}', // a key given twice
    ]) {
      const text = call(args, args.includes('path') ? 'write_file' : 'edit');
      const r = readBoth(text);
      expect(r.calls, args).toEqual([]);
      expect(r.content, args).toBe(text);
    }
  });

  it('escapeStrayQuotes: one reading or none', () => {
    expect(escapeStrayQuotes('{"a": "x "y" z"}')).toBe('{"a": "x \\"y\\" z"}');
    expect(escapeStrayQuotes('["d", "a "b" c"]')).toBe('["d", "a \\"b\\" c"]');
    expect(escapeStrayQuotes('["a "b" c", "d"]')).toBeNull(); // `, "d` could be the item's own text
    expect(escapeStrayQuotes('{"a": "x"}')).toBeNull(); // nothing to repair
    expect(escapeStrayQuotes('{"a": "x "y}')).toBeNull();
    expect(escapeStrayQuotes('{"a": "x "y" z}')).toBeNull(); // left open
    expect(escapeStrayQuotes('{\'a\': "x "y" z"}')).toBeNull();
  });

  it('never reads a value other than the one written (property: any text, quotes unescaped)', () => {
    const piece = fc.constantFrom(
      ...['a', ' ', '"', ',', ':', '}', '{', ']', '[', '\\n', 'x"', ' "', '" ', ', "', '":', 'é'],
      ...[', "path": "', '", "path": "', '"}', ', "content": "'],
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.boolean(), (parts, second) => {
        const value = parts.join('');
        // the value written as a weak model writes it: its quotes raw, a line break as `\\n`
        const args = second ? `{"path": "p", "content": "${value}"}` : `{"content": "${value}", "path": "p"}`;
        const text = call(args, 'write_file');
        const r = readBoth(text);
        if (r.calls.length === 0) {
          expect(r.content).toBe(text);
          return;
        }
        // strict JSON (a value such as `x", "path": "q`) is read as it always was; a reading
        // through the repair must be the value written
        if (!r.calls.some((c) => c.repairs?.includes('unescaped-quotes'))) return;
        const want = value.replace(/\\n/g, '\n');
        expect(r.calls.map((c) => JSON.parse(c.arguments))).toEqual([{ path: 'p', content: want }]);
      }),
      { numRuns: 1500, seed: 2020 },
    );
  });

  for (const [what, make] of [
    [
      'one long value of quoted words',
      (size: number) => call(`{"content": "${'said "x" '.repeat(Math.ceil(size / 9))}"}`),
    ],
    [
      'a value of comma-quote runs (each a lookahead for a key)',
      (size: number) => call(`{"content": "${'a", "b'.repeat(Math.ceil(size / 6))}"}`),
    ],
    [
      'a soup of quotes, commas, colons and brackets',
      (size: number, rnd: () => number) =>
        call(`{"content": "${soup(rnd, size, ['"', ', ', ':', '}', '{', ']', 'word ', '", "k": "'])}"}`),
    ],
  ] as const) {
    it(`costs at most about 4x for 4x the output (${what})`, () => {
      budget(
        `unescaped quotes, ${what}`,
        make,
        (text) => streamed(chunks(text, 64), options(tools)),
        { from: 2000, max: 256_000 },
        2020,
      );
    }, 120_000);
  }
});
