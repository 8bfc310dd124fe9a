/**
 * Issue 11 (B2), through the server: an improvised call (here a ReAct-style action in a JSON
 * fence) to a declared tool becomes a real tool call, streamed and not (the engine's side:
 * tests/parsers/improvised.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, type Stack, startStack } from '../server/stack.js';

const search = {
  name: 'search',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

describe('improvised through the server', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false, maxRetries: 0 } } });
  });
  afterAll(() => stack.close());
  const text = '```json\n{"action": "search", "action_input": {"query": "weather in SF"}}\n```';
  const request = {
    model: 'sim',
    messages: [{ role: 'user' as const, content: 'weather?' }],
    tools: [{ type: 'function' as const, function: search }],
  };
  const headers = { 'x-sim-scenario': JSON.stringify([{ raw: text }]) };

  it('non-streaming: a real tool call', async () => {
    const res = await stack.client.chat.completions.create(request, { headers });
    const calls = res.choices[0]!.message.tool_calls ?? [];
    expect(
      calls.map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : null)),
    ).toEqual([['search', { query: 'weather in SF' }]]);
    expect(res.choices[0]!.message.content).toBeNull();
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('streaming: the same call', async () => {
    const out = await collectStream(
      await stack.client.chat.completions.create({ ...request, stream: true }, { headers }),
    );
    expect(out.calls.map((c) => [c.name, JSON.parse(c.args)])).toEqual([
      ['search', { query: 'weather in SF' }],
    ]);
    expect(out.content).toBe('');
    expect(out.finish).toBe('tool_calls');
  });
});
