/**
 * The OpenAI Agents SDK (`@openai/agents`) with its default Responses model, pointed at
 * toolproof in front of the simulator: a tool loop runs to finalOutput, streamed and not; a
 * leaked `<tool_call>` reaches the SDK as a real function call it executes; the forced final
 * answer streams as live text deltas.
 */
import {
  Agent,
  OpenAIProvider,
  Runner,
  run,
  setDefaultOpenAIClient,
  setTracingDisabled,
  tool,
} from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Stack, startStack } from '../server/stack.js';

function clientFor(stack: Stack, scenario: string): OpenAI {
  return new OpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 15_000,
    defaultHeaders: { 'x-sim-scenario': scenario },
  });
}

function weatherAgent(seen: string[]) {
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      seen.push(city);
      return `Sunny and 21°C in ${city}`;
    },
  });
  return new Agent({
    name: 'weather',
    instructions: 'Answer weather questions.',
    model: 'sim',
    tools: [getWeather],
  });
}

const responsesCalls = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

describe('OpenAI Agents SDK through /v1/responses (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    // docs/api.md's setup: the SDK's default client (and so its default Responses model) is
    // toolproof. The default provider keeps the first client it sees, so this is set once.
    setTracingDisabled(true);
    setDefaultOpenAIClient(clientFor(stack, 'tools'));
  });
  afterAll(() => stack.close());

  it('runs a tool loop to finalOutput (non-streamed)', async () => {
    stack.sim.reset();
    const seen: string[] = [];
    const result = await run(weatherAgent(seen), 'Weather in Paris?');
    expect(seen).toHaveLength(1);
    expect(typeof result.finalOutput).toBe('string');
    expect((result.finalOutput as string).length).toBeGreaterThan(0);
    // Turn two carried the tool result back under the call id the first turn returned.
    const second = responsesCalls(stack)[1]!.body as { messages: Array<Record<string, unknown>> };
    const assistant = second.messages.find((m) => m.role === 'assistant') as {
      tool_calls: Array<{ id: string }>;
    };
    const toolMsg = second.messages.find((m) => m.role === 'tool')!;
    expect(toolMsg.tool_call_id).toBe(assistant.tool_calls[0]!.id);
    expect(toolMsg.content).toContain('Sunny and 21°C');
  });

  it('streams: the forced final answer arrives as many live text deltas', async () => {
    const seen: string[] = [];
    const result = await run(weatherAgent(seen), 'Weather in Paris?', { stream: true });
    const deltas: string[] = [];
    for await (const chunk of result.toTextStream()) deltas.push(chunk);
    await result.completed;
    expect(seen).toHaveLength(1);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe(result.finalOutput);
  });
});

describe('OpenAI Agents SDK through /v1/responses: leak recovery (forced tool use off)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`a leaked <tool_call> becomes a function call the SDK executes (stream: ${stream})`, async () => {
      const seen: string[] = [];
      // Same default Responses model, given this stack's client explicitly.
      const runner = new Runner({
        modelProvider: new OpenAIProvider({ openAIClient: clientFor(stack, 'leak-hermes') }),
        tracingDisabled: true,
      });
      const agent = weatherAgent(seen);
      const result = stream
        ? await runner.run(agent, 'Weather in Paris for 3 days?', { stream: true })
        : await runner.run(agent, 'Weather in Paris for 3 days?');
      if ('completed' in result) {
        for await (const _ of result.toTextStream()) {
          // drain
        }
        await result.completed;
      }
      expect(seen).toHaveLength(1);
      expect(result.finalOutput).toBeTruthy();
      expect(String(result.finalOutput)).not.toContain('<tool_call>');
    });
  }
});
