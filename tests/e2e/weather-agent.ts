/**
 * The Agents SDK's weather agent, shared by the Responses session tests (responses-previous,
 * conversations-items).
 */
import { OpenAIProvider, Runner, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import type { Stack } from '../server/stack.js';

/**
 * The Agents SDK's weather agent on a client of `stack`, the simulator scripted by the assistant
 * turns the request holds: a greeting, a call, then an answer. Had the history been lost, the
 * second run would be greeted again and never call. `seen`: the cities the tool ran for.
 */
export async function weatherAgent(stack: Stack, answer: (city: string) => string) {
  stack.sim.reset();
  const seen: string[] = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      seen.push(city);
      return answer(city);
    },
  });
  const { Agent } = await import('@openai/agents');
  const agent = new Agent({ name: 'weather', instructions: 'Answer.', model: 'sim', tools: [getWeather] });
  const client = new OpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    maxRetries: 0,
    timeout: 15_000,
    defaultHeaders: {
      'x-sim-scenario': JSON.stringify({
        turns: [
          { say: 'Hi.' },
          { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
          { say: 'Sunny.' },
        ],
      }),
    },
  });
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ openAIClient: client }),
    tracingDisabled: true,
  });
  return { agent, runner, seen, client };
}
