/**
 * The Agents SDK's weather agent, shared by the Responses tests (responses-agents,
 * responses-previous, conversations-items).
 */
import { Agent, OpenAIProvider, Runner, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import type { Stack } from '../server/stack.js';

/** The simulator's script for weatherAgent: a greeting, a call, then an answer. */
const SCRIPT = JSON.stringify({
  turns: [
    { say: 'Hi.' },
    { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    { say: 'Sunny.' },
  ],
});

/** An openai client of `stack` whose requests carry the simulator's `scenario`. */
export function agentsClient(stack: Stack, scenario: string): OpenAI {
  return new OpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 15_000,
    defaultHeaders: { 'x-sim-scenario': scenario },
  });
}

/** The agent and its get_weather tool: `seen` gets the cities it ran for, `answer` is its result. */
export function weatherAgentOf(seen: string[], answer: (city: string) => string): Agent {
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      seen.push(city);
      return answer(city);
    },
  });
  return new Agent({ name: 'weather', instructions: 'Answer.', model: 'sim', tools: [getWeather] });
}

/**
 * The Agents SDK's weather agent on a client of `stack`, the simulator scripted (`scenario`; by
 * default by the assistant turns the request holds: a greeting, a call, then an answer. Had the
 * history been lost, the second run would be greeted again and never call). `seen`: the cities
 * the tool ran for.
 */
export function weatherAgent(stack: Stack, answer: (city: string) => string, scenario = SCRIPT) {
  stack.sim.reset();
  const seen: string[] = [];
  const agent = weatherAgentOf(seen, answer);
  const client = agentsClient(stack, scenario);
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ openAIClient: client }),
    tracingDisabled: true,
  });
  return { agent, runner, seen, client };
}
