/**
 * The lead-in gate (issue 30, parsers/engine/lead-in.ts) over real HTTP: the simulator writes an
 * announcing sentence then a fenced call as text; the client gets a real tool call and the
 * sentence as content, streamed and not streamed alike. After "For example:" the same fence is
 * no call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { collectStream, type Stack, startStack, weatherTool } from './stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const tools = [weatherTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const raw = (text: string) => ({ headers: { 'x-sim-scenario': JSON.stringify({ raw: text }) } });
const FENCE = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```';

describe('lead-in gate through the server', () => {
  it('reads a fenced call after an announcing sentence, streamed equal to not streamed', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const text = `I'll look that up.\n\n${FENCE}`;
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: user, tools },
      raw(text),
    );
    const msg = res.choices[0]!.message;
    expect(msg.content).toBe("I'll look that up.");
    expect(
      msg.tool_calls?.map((c) => [
        c.type === 'function' ? c.function.name : '',
        c.type === 'function' ? JSON.parse(c.function.arguments) : null,
      ]),
    ).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');

    const streamed = await collectStream(
      await stack.client.chat.completions.create(
        { model: 'sim', messages: user, tools, stream: true },
        raw(text),
      ),
    );
    expect(streamed.content).toBe("I'll look that up.");
    expect(streamed.calls.map((c) => [c.name, JSON.parse(c.args)])).toEqual([
      ['get_weather', { city: 'Paris' }],
    ]);
    expect(streamed.finish).toBe('tool_calls');
  });

  it('reads no call after "For example:"', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const text = `For example:\n${FENCE}`;
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: user, tools },
      raw(text),
    );
    for (const c of res.choices) expect(c.message.tool_calls ?? []).toEqual([]);
    const streamed = await collectStream(
      await stack.client.chat.completions.create(
        { model: 'sim', messages: user, tools, stream: true },
        raw(text),
      ),
    );
    expect(streamed.calls).toEqual([]);
    expect(streamed.content).toBe(res.choices[0]!.message.content);
  });
});
