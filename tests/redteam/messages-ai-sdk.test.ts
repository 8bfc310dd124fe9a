/**
 * The AI SDK (`ai`) with `@ai-sdk/anthropic` pointed at toolproof's /v1/messages, in front of the
 * simulator: a multi-step tool run to a final text, streamed and not (the provider validates
 * every event against its own schemas, so a stray field or an event out of place fails here);
 * a leaked `<tool_call>` is executed as a tool call; toolChoice 'required' and a named tool
 * come back as calls; the forced final answer streams as live text deltas.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import {
  expectCallThenText,
  expectLeakRunsTheTool,
  expectStreamedCallThenText,
  generateToolRun,
  streamToolRun,
  weatherTools,
} from '../support/ai-sdk-weather.js';

function setup(stack: Stack, scenario: string) {
  const anthropic = createAnthropic({
    baseURL: `${stack.origin}/v1`,
    apiKey: 'unused',
    headers: { 'x-sim-scenario': scenario },
  });
  return { ...weatherTools({ days: true }), model: anthropic('sim') };
}

describe('@ai-sdk/anthropic through /v1/messages (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('generateText: tools, multi-step, to a final text', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    const result = await generateToolRun({ model, tools, prompt: 'Weather in Paris?' });
    expectCallThenText(result, seen);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
  });

  it('streamText: multi-step, live text deltas, the same text as the SDK assembles', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    expectStreamedCallThenText(await streamToolRun({ model, tools, prompt: 'Weather in Paris?' }), seen);
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

  it.each([false, true])('a leaked <tool_call> is executed as a tool call (stream: %s)', (stream) =>
    expectLeakRunsTheTool(() => setup(stack, 'leak-hermes'), stream),
  );
});
