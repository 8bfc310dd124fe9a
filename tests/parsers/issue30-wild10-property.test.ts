/**
 * Properties of the readings issue 30's second fresh set led to (docs/recall.md, "The honest
 * measurement, again"), over random values and chunkings:
 * - Hermes `<tool_call>NAME key="v" … />` (openclaw/openclaw#33258): read exactly, in any order of
 *   the attributes, closed by `/>` or `>`, with or without `</tool_call>`; NOT read when prose
 *   follows the element or an attribute is outside the schema;
 * - a ```thinking fence, then a ```function_call fence (gemma3 benchmarks): read, the thinking
 *   fence kept as content byte for byte; NOT read after "For example:" or when prose follows.
 * Streamed (random piece sizes) equals whole every time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const tools = toolsOf({
  name: 'exec',
  parameters: {
    type: 'object',
    properties: { command: { type: 'string' }, timeout: { type: 'integer' }, cwd: { type: 'string' } },
    required: ['command'],
  },
});
const value = fc.stringMatching(/^[a-z0-9 ./_-]{1,24}$/);
const sentence = fc.constantFrom(
  'I will run it now.',
  '好的，我来看一下。',
  'Checking the folder.',
  'Let me look.',
);

function both(text: string, size: number) {
  const r = whole(text, options(tools));
  const st = streamed(chunks(text, size), options(tools));
  expect(st.calls).toEqual(r.calls);
  expect(st.content).toBe(r.content);
  return r;
}

describe('property: hermes attribute arguments', () => {
  it('reads a declared element with attributes that fit, in any order and closing', () => {
    fc.assert(
      fc.property(
        sentence,
        value,
        fc.option(fc.integer({ min: 0, max: 9999 }), { nil: undefined }),
        fc.option(value, { nil: undefined }),
        fc.boolean(),
        fc.constantFrom(' />', '/>', '>', ' />\n</tool_call>', '></tool_call>'),
        fc.integer({ min: 1, max: 9 }),
        (s, command, timeout, cwd, reversed, close, size) => {
          const attrs = [`command="${command}"`];
          if (timeout !== undefined) attrs.push(`timeout="${timeout}"`);
          if (cwd !== undefined) attrs.push(`cwd="${cwd}"`);
          if (reversed) attrs.reverse();
          const text = `${s}<tool_call>exec ${attrs.join(' ')}${close}`;
          const r = both(text, size);
          const args: Record<string, unknown> = { command };
          if (timeout !== undefined) args['timeout'] = timeout;
          if (cwd !== undefined) args['cwd'] = cwd;
          expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['exec', args]]);
          expect(r.content).toBe(s);
        },
      ),
      { numRuns: 200, seed: 3001 },
    );
  });

  it('keeps it text when prose follows or an attribute is outside the schema', () => {
    fc.assert(
      fc.property(
        sentence,
        value,
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        (s, command, size, prose) => {
          const text = prose
            ? `${s}<tool_call>exec command="${command}" /> and then I read it`
            : `${s}<tool_call>exec command="${command}" user="root" />`;
          const r = both(text, size);
          expect(r.calls).toEqual([]);
          expect(r.content).toBe(text);
        },
      ),
      { numRuns: 200, seed: 3002 },
    );
  });
});

describe('property: a ```thinking fence, then a call fence', () => {
  const thinking = fc
    .array(
      fc.constantFrom('I should run ', '`exec` ', 'the command ', 'e.g. ', 'like this: ', '{', '<b>', '. '),
      {
        minLength: 1,
        maxLength: 12,
      },
    )
    .map((w) => `\`\`\`thinking\n${w.join('')}\n\`\`\`\n`);
  const call = (command: string) =>
    `\`\`\`function_call\n{\n\t"id": "1",\n\t"function": "exec",\n\t"parameters": {"command": "${command}"}\n}\n\`\`\``;

  it('reads the call and keeps the thinking fence as content', () => {
    fc.assert(
      fc.property(thinking, value, fc.integer({ min: 1, max: 9 }), (t, command, size) => {
        const text = `${t}${call(command)}`;
        const r = both(text, size);
        expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['exec', { command }]]);
        expect(r.content).toBe(t.trimEnd());
      }),
      { numRuns: 200, seed: 3003 },
    );
  });

  it('keeps it text after an example, or when prose follows the call', () => {
    fc.assert(
      fc.property(
        thinking,
        value,
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        (t, command, size, example) => {
          const text = example ? `${t}For example:\n${call(command)}` : `${t}${call(command)}\nThen I wait.`;
          const r = both(text, size);
          expect(r.calls).toEqual([]);
          expect(r.content).toBe(text);
        },
      ),
      { numRuns: 200, seed: 3004 },
    );
  });
});
