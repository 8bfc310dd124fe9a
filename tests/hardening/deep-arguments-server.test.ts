/**
 * Issue 8 (A4), through the server: tool arguments nested 100k levels deep are not a call and
 * never a 500; the text arrives as content, streamed or not (the engine's side:
 * tests/parsers/deep-nesting.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, startStack, type Stack } from '../server/stack.js';

const N = 100_000;
const deepCall = `<tool_call>{"name":"f","arguments":{"a":${'['.repeat(N)}${']'.repeat(N)}}}</tool_call>`;

describe('deep nesting through the server: no 500', () => {
  let stack: Stack;
  beforeAll(async () => {
    // the scenario is too large for a header: it is the simulator's default for this stack
    stack = await startStack({
      sim: { scenario: [{ raw: deepCall }] },
      // no corrective retry: this checks what one attempt gives
      file: { defaults: { forceToolUse: false, maxRetries: 0 } },
    });
  });
  afterAll(() => stack.close());

  it('non-streaming: 200 with the text as content', async () => {
    const text = deepCall;
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
