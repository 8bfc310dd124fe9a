/**
 * The AI SDK (`ai`) with `@ai-sdk/openai`'s default provider (the Responses API) pointed at
 * toolproof in front of the simulator: tools with multi-step runs to a final text, streamed
 * and not; a leaked `<tool_call>` is executed as a real tool call; the forced final answer
 * streams as live text deltas.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
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
  const openai = createOpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    headers: { 'x-sim-scenario': scenario },
  });
  // openai(id) is the default provider model: the Responses API.
  return { ...weatherTools(), model: openai('sim') };
}

const chatBodies = (s: Stack) =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body as Record<string, unknown>);

describe('@ai-sdk/openai default provider through /v1/responses (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('generateText: tools, multi-step, to a final text', async () => {
    stack.sim.reset();
    const { seen, model, tools } = setup(stack, 'tools');
    const result = await generateToolRun({ model, tools, prompt: 'Weather in Paris?' });
    expectCallThenText(result, seen);
    // Step two sent the tool result back under the call id step one returned.
    const messages = chatBodies(stack)[1]!.messages as Array<Record<string, unknown>>;
    const assistant = messages.find((m) => m.role === 'assistant') as { tool_calls: Array<{ id: string }> };
    const toolMsg = messages.find((m) => m.role === 'tool')!;
    expect(toolMsg.tool_call_id).toBe(assistant.tool_calls[0]!.id);
    expect(assistant.tool_calls[0]!.id).toBe(result.steps[0]!.toolCalls[0]!.toolCallId);
  });

  it('streamText: multi-step; the forced final answer arrives as many live text deltas', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    expectStreamedCallThenText(await streamToolRun({ model, tools, prompt: 'Weather in Paris?' }), seen);
  });
  it('a later turn needs store: false (toolproof is stateless and cannot resolve item_reference)', async () => {
    const { model } = setup(stack, 'prose');
    const first = await generateText({ model, prompt: 'What is 2+2?' });
    const history = [
      { role: 'user' as const, content: 'What is 2+2?' },
      ...first.response.messages,
      { role: 'user' as const, content: 'And 3+3?' },
    ];
    // By default the provider refers to earlier output by id (store: true): a clear 400.
    await expect(generateText({ model, messages: history, maxRetries: 0 })).rejects.toThrow(/item_reference/);
    const second = await generateText({
      model,
      messages: history,
      providerOptions: { openai: { store: false } },
    });
    expect(second.text.length).toBeGreaterThan(0);
    const sent = chatBodies(stack).at(-1)!.messages as Array<{ role: string; content: unknown }>;
    expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(sent[1]!.content).toBe(first.text);
  });
});

describe('@ai-sdk/openai default provider through /v1/responses: leak recovery (forced tool use off)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  it.each([false, true])('a leaked <tool_call> is executed as a tool call (stream: %s)', (stream) =>
    expectLeakRunsTheTool(() => setup(stack, 'leak-hermes'), stream),
  );
});
