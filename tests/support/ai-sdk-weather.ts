/**
 * The AI SDK (`ai`) side of the tool-run tests through a front door (the Responses door with
 * `@ai-sdk/openai`, the Messages door with `@ai-sdk/anthropic`): one get_weather tool that
 * records the cities it ran for, and a multi-step run to a final text, streamed or not.
 */
import { generateText, type LanguageModel, stepCountIs, streamText, tool } from 'ai';
import { expect } from 'vitest';
import { z } from 'zod';

/** get_weather ({city}, or {city, days?} with `days`); `seen` lists the cities it ran for. */
export function weatherTools(options: { days?: boolean } = {}) {
  const seen: string[] = [];
  const inputSchema = options.days
    ? z.object({ city: z.string(), days: z.number().optional() })
    : z.object({ city: z.string() });
  const tools = {
    get_weather: tool({
      description: 'Current weather for a city',
      inputSchema,
      execute: async ({ city }: { city: string }) => {
        seen.push(city);
        return { city, forecast: 'sunny', celsius: 21 };
      },
    }),
  };
  return { seen, tools };
}

type WeatherRun = { model: LanguageModel; tools: ReturnType<typeof weatherTools>['tools']; prompt: string };

/** generateText over up to four steps (calls, then a text). */
export function generateToolRun(params: WeatherRun) {
  return generateText({ ...params, stopWhen: stepCountIs(4) });
}

/**
 * The run above, streamed or not: the text of every step, in order (a leaked call shows in the
 * first step's, not in the final text alone), as streamText's text stream carries it.
 */
export async function runTools(params: WeatherRun, stream: boolean): Promise<string> {
  if (!stream) return (await generateToolRun(params)).steps.map((s) => s.text).join('');
  const result = streamText({ ...params, stopWhen: stepCountIs(4) });
  let text = '';
  for await (const d of result.textStream) text += d;
  return text;
}

/** One call run by the tool, then a final text in a second step, with usage counted. */
export function expectCallThenText(
  result: Awaited<ReturnType<typeof generateToolRun>>,
  seen: string[],
): void {
  expect(seen).toHaveLength(1);
  expect(result.steps).toHaveLength(2);
  expect(result.steps[0]!.toolCalls).toHaveLength(1);
  expect(result.text.length).toBeGreaterThan(0);
  expect(result.finishReason).toBe('stop');
  expect(result.totalUsage.outputTokens).toBeGreaterThan(0);
}
