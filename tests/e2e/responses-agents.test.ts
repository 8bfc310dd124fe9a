/**
 * The OpenAI Agents SDK (`@openai/agents`) with its default Responses model, pointed at
 * toolproof in front of the simulator: a tool loop runs to finalOutput, streamed and not; a
 * leaked `<tool_call>` reaches the SDK as a real function call it executes; the forced final
 * answer streams as live text deltas.
 */
import { run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { agentsClient, weatherAgent, weatherAgentOf } from './weather-agent.js';

const sunny = (city: string) => `Sunny and 21°C in ${city}`;

const responsesCalls = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

describe('OpenAI Agents SDK through /v1/responses (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    // docs/api.md's setup: the SDK's default client (and so its default Responses model) is
    // toolproof. The default provider keeps the first client it sees, so this is set once.
    setTracingDisabled(true);
    setDefaultOpenAIClient(agentsClient(stack, 'tools'));
  });
  afterAll(() => stack.close());

  it('runs a tool loop to finalOutput (non-streamed)', async () => {
    stack.sim.reset();
    const seen: string[] = [];
    const result = await run(weatherAgentOf(seen, sunny), 'Weather in Paris?');
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
    const result = await run(weatherAgentOf(seen, sunny), 'Weather in Paris?', { stream: true });
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
      // Same default Responses model, given this stack's client explicitly.
      const { agent, runner, seen } = weatherAgent(stack, sunny, 'leak-hermes');
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
