/**
 * Issue 8 (A4): 100k-level nesting in tool arguments threw RangeError (JSON.stringify's and
 * jsonrepair's recursion) out of the engine: a 500 for the client. Nesting deeper than
 * MAX_NESTING (512) is now "not a call": the text stays content, never an exception.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_NESTING, nestsDeeper } from '../../parsers/kit/json-scan.js';
import { decodeJsonLenient, unsafeArguments } from '../../parsers/kit/lenient-json.js';
import { collectStream, startStack, type Stack } from '../server/stack.js';
import { chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const N = 100_000;
const deep = `${'['.repeat(N)}${']'.repeat(N)}`;
const tools = toolsOf({ name: 'f' });

const hostile: Record<string, string> = {
  'hermes JSON arguments': `<tool_call>{"name":"f","arguments":{"a":${deep}}}</tool_call>`,
  'hermes JSON needing a repair (jsonrepair path)': `<tool_call>{"name":"f","arguments":{"a":${'['.repeat(N)}1,${']'.repeat(N)}}}</tool_call>`,
  'bare JSON output': `{"name":"f","arguments":{"a":${deep}}}`,
  'pythonic list': `[f(a=${deep})]`,
  'objects, not arrays': `<tool_call>{"name":"f","arguments":${'{"a":'.repeat(N)}1${'}'.repeat(N)}}</tool_call>`,
  'qwen3-coder parameter typed as array': `<tool_call>\n<function=f>\n<parameter=a>\n${deep}\n</parameter>\n</function>\n</tool_call>`,
};

describe('deep nesting never throws and is not a call', () => {
  for (const [name, text] of Object.entries(hostile)) {
    it(name, () => {
      const t = toolsOf({ name: 'f', parameters: { type: 'object', properties: { a: { type: 'array' } } } });
      const r = whole(text, options(t));
      expect(r.calls).toEqual([]);
      // nothing lost: the raw text is the content
      expect(r.content).toBe(text);
      expect(view(streamed(chunks(text, 4096), options(t)))).toEqual(view(r));
    });
  }

  it('nesting at the cap is still a call', () => {
    const ok = `${'['.repeat(MAX_NESTING - 2)}${']'.repeat(MAX_NESTING - 2)}`;
    const r = whole(`<tool_call>{"name":"f","arguments":{"a":${ok}}}</tool_call>`, options(tools));
    expect(r.calls).toHaveLength(1);
  });

  it('the guards: nestsDeeper is string aware, unsafeArguments walks without recursion', () => {
    expect(nestsDeeper(`"${'['.repeat(1000)}"`, 10)).toBe(false);
    expect(nestsDeeper('[[[', 2)).toBe(true);
    expect(decodeJsonLenient(deep)).toBeNull();
    let v: unknown = 1;
    for (let i = 0; i < N; i++) v = [v];
    expect(unsafeArguments({ a: v })).toBe('arguments nest too deep');
  });
});

describe('deep nesting through the server: no 500', () => {
  let stack: Stack;
  beforeAll(async () => {
    // the scenario is too large for a header: it is the simulator's default for this stack
    stack = await startStack({
      sim: { scenario: [{ raw: hostile['hermes JSON arguments']! }] },
      // no corrective retry: this checks what one attempt gives
      file: { defaults: { forceToolUse: false, maxRetries: 0 } },
    });
  });
  afterAll(() => stack.close());

  it('non-streaming: 200 with the text as content', async () => {
    const text = hostile['hermes JSON arguments']!;
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(res.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(res.choices[0]!.message.content).toBe(text);
  });

  it('streaming: past the cap the text arrives as content, the stream ends normally', async () => {
    // 2,000 levels (4k SSE chunks; 100k levels would be 200k chunks, too slow for this box)
    const text = `<tool_call>{"name":"f","arguments":{"a":${'['.repeat(2000)}${']'.repeat(2000)}}}</tool_call>`;
    const out = await collectStream(
      await stack.client.chat.completions.create(
        {
          model: 'sim',
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
          stream: true,
        },
        { headers: { 'x-sim-scenario': JSON.stringify([{ raw: text }]) } },
      ),
    );
    expect(out.calls).toEqual([]);
    expect(out.content).toBe(text);
    expect(out.finish).toBe('stop');
  });
});
