/**
 * The AI SDK (`ai`) with `@ai-sdk/anthropic` pointed at toolproof's /v1/messages, in front of the
 * simulator: a multi-step tool run to a final text, streamed and not (the provider validates
 * every event against its own schemas, so a stray field or an event out of place fails here);
 * a leaked `<tool_call>` is executed as a tool call; toolChoice 'required' and a named tool
 * come back as calls; the forced final answer streams as live text deltas.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Stack, startStack } from '../server/stack.js';

function setup(stack: Stack, scenario: string) {
  const seen: string[] = [];
  const anthropic = createAnthropic({
    baseURL: `${stack.origin}/v1`,
    apiKey: 'unused',
    headers: { 'x-sim-scenario': scenario },
  });
  const tools = {
    get_weather: tool({
      description: 'Current weather for a city',
      inputSchema: z.object({ city: z.string(), days: z.number().optional() }),
      execute: async ({ city }) => {
        seen.push(city);
        return { city, forecast: 'sunny', celsius: 21 };
      },
    }),
  };
  return { seen, model: anthropic('sim'), tools };
}

describe('@ai-sdk/anthropic through /v1/messages (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('generateText: tools, multi-step, to a final text', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    const result = await generateText({
      model,
      tools,
      stopWhen: stepCountIs(4),
      prompt: 'Weather in Paris?',
    });
    expect(seen).toHaveLength(1);
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe('stop');
    expect(result.totalUsage.outputTokens).toBeGreaterThan(0);
  });

  it('streamText: multi-step, live text deltas, the same text as the SDK assembles', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    const errors: unknown[] = [];
    const result = streamText({
      model,
      tools,
      stopWhen: stepCountIs(4),
      prompt: 'Weather in Paris?',
      onError: ({ error }) => void errors.push(error),
    });
    const deltas: string[] = [];
    for await (const d of result.textStream) deltas.push(d);
    expect(errors).toEqual([]);
    expect(seen).toHaveLength(1);
    expect(await result.steps).toHaveLength(2);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe(await result.text);
    expect(await result.finishReason).toBe('stop');
  });

  it.each([false, true])(
    'reasoning comes back as reasoning, before the text (stream: %s)',
    async (stream) => {
      const { model } = setup(stack, JSON.stringify([{ think: 'Let me think.', say: 'Hello there.' }]));
      const params = { model, prompt: 'hi' };
      if (stream) {
        const result = streamText(params);
        const parts: string[] = [];
        for await (const p of result.fullStream)
          if (p.type === 'reasoning-delta' || p.type === 'text-delta') parts.push(p.type);
        expect(parts[0]).toBe('reasoning-delta');
        expect(await result.reasoningText).toBe('Let me think.');
        expect(await result.text).toBe('Hello there.');
      } else {
        const result = await generateText(params);
        expect(result.reasoningText).toBe('Let me think.');
        expect(result.text).toBe('Hello there.');
      }
    },
  );

  it.each([false, true])(
    'toolChoice required and a named tool come back as a call (stream: %s)',
    async (stream) => {
      for (const toolChoice of ['required', { type: 'tool', toolName: 'get_weather' }] as const) {
        const { model, tools } = setup(stack, 'tools');
        const params = { model, tools, toolChoice, prompt: 'Weather in Paris?' };
        if (stream) {
          const result = streamText({ ...params, onError: ({ error }) => expect(error).toBeUndefined() });
          await result.consumeStream();
          expect((await result.toolCalls).map((c) => c.toolName)).toEqual(['get_weather']);
        } else {
          const result = await generateText(params);
          expect(result.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
        }
      }
    },
  );
});

describe('@ai-sdk/anthropic through /v1/messages: leak recovery (forced tool use off)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  it.each([false, true])('a leaked <tool_call> is executed as a tool call (stream: %s)', async (stream) => {
    const { seen, model, tools } = setup(stack, 'leak-hermes');
    const params = { model, tools, stopWhen: stepCountIs(4), prompt: 'Weather in Paris for 3 days?' };
    let text: string;
    if (stream) {
      const result = streamText(params);
      text = '';
      for await (const d of result.textStream) text += d;
    } else {
      text = (await generateText(params)).text;
    }
    expect(seen).toHaveLength(1);
    expect(text).not.toContain('<tool_call>');
    expect(text.length).toBeGreaterThan(0);
  });
});
