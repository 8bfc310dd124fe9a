/**
 * Structured output beside a tool through the real agent SDKs, against the simulator's
 * reproduction of vLLM's bug (vllm-project/vllm#39929, #16313: a response_format beside tools
 * suppresses the tool call): the OpenAI Agents SDK's `outputType` (a zod schema) with a tool, and
 * the AI SDK's `Output.object` with a tool (`@ai-sdk/openai`, Responses and chat). Through
 * toolproof the tool is called and the final output validates against the schema, streamed and
 * not alike.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateText, Output, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ScenarioFn } from '../../simulator/index.js';
import { type Stack, startStack } from '../server/stack.js';

const Weather = z.object({ city: z.string(), celsius: z.number() });
const ANSWER = '{"city":"Paris","celsius":21}';

/** Calls get_weather until its result is in, then answers in the schema's JSON. */
const model: ScenarioFn = (ctx) => {
  const results = ctx.messages.filter((m) => m?.role === 'tool').length;
  if (results === 0 && ctx.tools.some((t) => t.function?.name === 'get_weather'))
    return { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
  return { say: ANSWER };
};

let stack: Stack;
beforeAll(async () => {
  setTracingDisabled(true);
  stack = await startStack({ sim: { scenario: model, formatSuppressesTools: true } });
});
afterAll(() => stack.close());

/** Every upstream request went without response_format, the answer tool carrying the schema. */
function expectNoResponseFormatUpstream(from: number) {
  const bodies = stack.sim.requests.slice(from).map((r) => r.body as Record<string, unknown>);
  expect(bodies.length).toBeGreaterThanOrEqual(2);
  for (const b of bodies) expect(b.response_format).toBeUndefined();
}

describe('OpenAI Agents SDK: outputType (zod) and a tool', () => {
  for (const api of ['responses', 'chat_completions'] as const) {
    for (const stream of [false, true]) {
      it(`${api}${stream ? ', streamed' : ''}: the tool is called and finalOutput validates`, async () => {
        const seen: string[] = [];
        const getWeather = agentTool({
          name: 'get_weather',
          description: 'Current weather for a city',
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            seen.push(city);
            return 'Sunny and 21°C';
          },
        });
        const agent = new Agent({
          name: 'weather',
          instructions: 'Answer with the weather as JSON.',
          model: 'sim',
          tools: [getWeather],
          outputType: Weather,
        });
        const client = new OpenAI({ baseURL: stack.url, apiKey: 'unused', maxRetries: 0, timeout: 15_000 });
        const runner = new Runner({
          modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: api === 'responses' }),
        });
        const from = stack.sim.requests.length;
        let output: unknown;
        if (stream) {
          const result = await runner.run(agent, 'Weather in Paris?', { stream: true });
          for await (const _ of result) {
            // drain
          }
          await result.completed;
          output = result.finalOutput;
        } else {
          output = (await runner.run(agent, 'Weather in Paris?')).finalOutput;
        }
        expect(seen).toEqual(['Paris']);
        expect(Weather.parse(output)).toEqual({ city: 'Paris', celsius: 21 });
        expectNoResponseFormatUpstream(from);
      });
    }
  }
});

describe('AI SDK: Output.object and a tool', () => {
  for (const api of ['responses', 'chat'] as const) {
    for (const stream of [false, true]) {
      it(`${api}${stream ? ', streamed' : ''}: the tool is called and the output validates`, async () => {
        const seen: string[] = [];
        const openai = createOpenAI({ baseURL: stack.url, apiKey: 'unused' });
        const tools = {
          get_weather: tool({
            description: 'Current weather for a city',
            inputSchema: z.object({ city: z.string() }),
            execute: async ({ city }) => {
              seen.push(city);
              return { celsius: 21 };
            },
          }),
        };
        const settings = {
          model: api === 'chat' ? openai.chat('sim') : openai('sim'),
          tools,
          output: Output.object({ schema: Weather }),
          stopWhen: stepCountIs(5),
          prompt: 'Weather in Paris?',
        };
        const from = stack.sim.requests.length;
        let output: unknown;
        if (stream) {
          const result = streamText(settings);
          for await (const _ of result.textStream) {
            // drain
          }
          output = await result.output;
        } else {
          output = (await generateText(settings)).output;
        }
        expect(seen).toEqual(['Paris']);
        expect(Weather.parse(output)).toEqual({ city: 'Paris', celsius: 21 });
        expectNoResponseFormatUpstream(from);
      });
    }
  }
});
