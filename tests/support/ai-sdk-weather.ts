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

/** streamText over the same steps: its text deltas as they came, what the SDK assembled, its errors. */
export async function streamToolRun(params: WeatherRun) {
  const errors: unknown[] = [];
  const result = streamText({
    ...params,
    stopWhen: stepCountIs(4),
    onError: ({ error }) => void errors.push(error),
  });
  const deltas: string[] = [];
  for await (const d of result.textStream) deltas.push(d);
  return {
    deltas,
    errors,
    steps: await result.steps,
    text: await result.text,
    finish: await result.finishReason,
  };
}

/**
 * Streamed: no error, one call run by the tool, a final text in a second step that came as many
 * live deltas (the forced final answer is not held to its end), the same text the SDK assembled.
 */
export function expectStreamedCallThenText(
  run: Awaited<ReturnType<typeof streamToolRun>>,
  seen: string[],
): void {
  expect(run.errors).toEqual([]);
  expect(seen).toHaveLength(1);
  expect(run.steps).toHaveLength(2);
  expect(run.deltas.length).toBeGreaterThan(5);
  expect(run.deltas.join('')).toBe(run.text);
  expect(run.finish).toBe('stop');
}

/** A leaked call executed by the tool, streamed or not: nothing of its markup left in the text. */
export async function expectLeakRunsTheTool(
  setup: () => { seen: string[] } & Omit<WeatherRun, 'prompt'>,
  stream: boolean,
): Promise<void> {
  const { seen, model, tools } = setup();
  const text = await runTools({ model, tools, prompt: 'Weather in Paris for 3 days?' }, stream);
  expect(seen).toHaveLength(1);
  expect(text).not.toContain('<tool_call>');
  expect(text.length).toBeGreaterThan(0);
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
