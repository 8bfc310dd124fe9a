import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, type Stack, startStack, weatherTool } from './stack.js';

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`openai client through toolproof (${personality} simulator)`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality, scenario: 'tools' } });
    });
    afterAll(() => stack.close());

    it('non-streaming chat without tools is relayed', async () => {
      const res = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      expect(res.object).toBe('chat.completion');
      expect(res.choices[0]?.message.role).toBe('assistant');
      expect(typeof res.choices[0]?.message.content).toBe('string');
      expect(res.choices[0]?.message.content?.length).toBeGreaterThan(0);
      expect(res.usage?.total_tokens).toBeGreaterThan(0);
    });

    it('streaming chat with include_usage ends with a usage chunk', async () => {
      const stream = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Tell me a short story' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: unknown = null;
      let finish: string | null = null;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
          text += c.delta.content ?? '';
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
      expect(chunks).toBeGreaterThan(2);
      expect(text.length).toBeGreaterThan(0);
      expect(finish).toMatch(/stop|length/);
      expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
    });

    it('tools in the request: structured calls come back as tool_calls (non-streaming)', async () => {
      const res = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [weatherTool],
      });
      const msg = res.choices[0]!.message;
      expect(msg.tool_calls?.length).toBeGreaterThan(0);
      const call = msg.tool_calls![0]!;
      expect(call.type).toBe('function');
      if (call.type !== 'function') throw new Error('unreachable');
      expect(call.function.name).toBe('get_weather');
      expect(JSON.parse(call.function.arguments)).toEqual(expect.any(Object));
      expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    });

    it('tools in the request: streamed tool calls assemble into a valid call', async () => {
      const { calls, finish } = await collectStream(
        await stack.client.chat.completions.create({
          model: 'sim',
          messages: [{ role: 'user', content: 'Weather in Paris?' }],
          tools: [weatherTool],
          stream: true,
        }),
      );
      expect(calls.length).toBeGreaterThan(0);
      expect(calls[0]!.name).toBe('get_weather');
      expect(calls[0]!.id).toBeTruthy();
      expect(JSON.parse(calls[0]!.args)).toEqual(expect.any(Object));
      expect(finish).toBe('tool_calls');
    });

    it('lists models', async () => {
      const page = await stack.client.models.list();
      expect(page.data.length).toBeGreaterThan(0);
      expect(page.data[0]!.id).toEqual(expect.any(String));
    });

    it('models.retrieve: the model object of a served model, an OpenAI-shaped 404 for an unknown one', async () => {
      const id = (await stack.client.models.list()).data[0]!.id;
      expect(await stack.client.models.retrieve(id)).toMatchObject({ id, object: 'model' });
      const err = (await stack.client.models
        .retrieve('no-such-model')
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.NotFoundError>;
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error).toMatchObject({
        type: 'invalid_request_error',
        param: 'model',
        message: expect.stringContaining('"no-such-model"'),
      });
    });

    it('embeddings are passed through', async () => {
      const res = await stack.client.embeddings.create({ model: 'sim', input: ['hello', 'world'] });
      expect(res.data).toHaveLength(2);
      expect(res.data[0]!.embedding.length).toBeGreaterThan(0);
    });

    it('vendor extras pass through untouched', async () => {
      stack.sim.reset();
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        // @ts-expect-error vendor extras are not in the OpenAI types
        chat_template_kwargs: { enable_thinking: false },
        cache_prompt: true,
        guided_json: { type: 'object' },
      });
      const body = stack.sim.requests.at(-1)!.body as Record<string, unknown>;
      expect(body.chat_template_kwargs).toEqual({ enable_thinking: false });
      expect(body.cache_prompt).toBe(true);
      expect(body.guided_json).toEqual({ type: 'object' });
    });
  });
}

describe('models.retrieve of an id with a slash (org/model)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { modelName: 'org/model-a' } });
  });
  afterAll(() => stack.close());

  it('finds it, whether the client encodes the slash or not', async () => {
    expect(await stack.client.models.retrieve('org/model-a')).toMatchObject({ id: 'org/model-a' });
    const raw = await fetch(`${stack.url}/models/org/model-a`);
    expect(((await raw.json()) as { id: string }).id).toBe('org/model-a');
  });
});
