/**
 * Issue 30, a bare `</think>` before a call, end to end: with `startsInReasoning: 'maybe'` in
 * the config, the real server in front of the simulator returns the text before the close as
 * reasoning, the call as a tool call and no content, streamed and not; without it the reasoning
 * stays in content (as before), and an answer with no close is content either way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from './stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const tools = [weatherTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const RAW =
  'The user wants the weather.\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const scenario = (raw: string) => ({ headers: { 'x-sim-scenario': JSON.stringify({ raw }) } });

type Msg = {
  content?: string | null;
  reasoning_content?: string | null;
  tool_calls?: Array<{ function: { name: string } }>;
};

async function ask(s: Stack, raw: string) {
  const res = await s.client.chat.completions.create({ model: 'sim', messages: user, tools }, scenario(raw));
  const msg = res.choices[0]!.message as unknown as Msg;
  const stream = await s.client.chat.completions.create(
    { model: 'sim', messages: user, tools, stream: true },
    scenario(raw),
  );
  let content = '';
  let reasoning = '';
  const names: string[] = [];
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      const d = ch.delta as typeof ch.delta & { reasoning_content?: string | null };
      content += d.content ?? '';
      reasoning += d.reasoning_content ?? '';
      for (const t of d.tool_calls ?? []) if (t.function?.name) names.push(t.function.name);
    }
  }
  return {
    whole: {
      content: msg.content ?? '',
      reasoning: msg.reasoning_content ?? '',
      names: (msg.tool_calls ?? []).map((t) => t.function.name),
    },
    streamed: { content, reasoning, names },
  };
}

describe("startsInReasoning 'maybe' through the server", () => {
  it('a bare </think> before a call: reasoning, the call, no content; streamed equals whole', async () => {
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { defaults: { startsInReasoning: 'maybe' } },
    });
    const r = await ask(stack, RAW);
    expect(r.whole).toEqual({
      content: '',
      reasoning: 'The user wants the weather.\n',
      names: ['get_weather'],
    });
    expect(r.streamed).toEqual(r.whole);
    const plain = await ask(stack, 'Paris is sunny today.');
    expect(plain.whole).toEqual({ content: 'Paris is sunny today.', reasoning: '', names: [] });
    expect(plain.streamed).toEqual(plain.whole);
  });

  it('without it the reasoning stays in content, as before', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const r = await ask(stack, RAW);
    expect(r.whole).toEqual({
      content: 'The user wants the weather.\n</think>',
      reasoning: '',
      names: ['get_weather'],
    });
  });
});

describe('startsInReasoning config values', () => {
  it("true, false or 'maybe'; anything else is a config error", async () => {
    const { loadConfig } = await import('../../server/config.js');
    const url = { TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' };
    const at = (v: unknown) =>
      loadConfig(url, { defaults: { startsInReasoning: v } } as Parameters<typeof loadConfig>[1]).defaults
        .startsInReasoning;
    expect(at('maybe')).toBe('maybe');
    expect(at(true)).toBe(true);
    expect(() => at('perhaps')).toThrow(/startsInReasoning/);
  });
});
