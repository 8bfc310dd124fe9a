/**
 * `n > 1` on the built-in simulator, as a new user tries the README's promise ("`n > 1`: every
 * choice recovered and validated") with `npm start` and no backend: the simulator answered one
 * choice whatever `n` asked, so toolproof looked as if it dropped the others. Its vLLM personality
 * now samples `n` choices (vLLM does; llama-server refuses n != 1), each through the harness.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack, weatherTool } from '../server/stack.js';

describe('n > 1 through toolproof on the built-in simulator (vLLM personality)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { scenario: 'demo' } });
  });
  afterAll(() => stack.close());

  const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

  it('answers n choices, each with its own tool call', async () => {
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      n: 3,
      messages,
      tools: [weatherTool],
    });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const ids = res.choices.map((c) => {
      expect(c.finish_reason).toBe('tool_calls');
      const call = c.message.tool_calls?.[0];
      expect(call?.type === 'function' && call.function.name).toBe('get_weather');
      return call?.id;
    });
    expect(new Set(ids).size).toBe(3);
  });

  it('streamed: the same n choices, interleaved by index, and usage counts them all', async () => {
    const one = await stack.client.chat.completions.create({ model: 'sim', messages });
    const stream = await stack.client.chat.completions.create({
      model: 'sim',
      n: 2,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const text: string[] = ['', ''];
    const finish: Array<string | null> = [null, null];
    let completion = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
      if (chunk.usage) completion = chunk.usage.completion_tokens;
    }
    expect(text).toEqual([one.choices[0]!.message.content, one.choices[0]!.message.content]);
    expect(finish).toEqual(['stop', 'stop']);
    expect(completion).toBe(2 * one.usage!.completion_tokens);
  });

  it('the simulator itself, straight: n choices (llama-server personality still refuses n != 1)', async () => {
    const res = await fetch(`${stack.sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', n: 4, messages }),
    });
    const body = (await res.json()) as { choices: Array<{ index: number }> };
    expect(body.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
  });
});
