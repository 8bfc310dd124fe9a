/** Streaming equals non-streaming: the same scripted turn, folded from deltas, gives the same message. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator, type TurnAction } from '../../simulator/index.js';
import {
  accumulate,
  chat,
  FINAL_ANSWER_TOOL,
  messageOf,
  scenarioHeader,
  sseEvents,
  WEATHER_TOOL,
} from './helpers.js';

const ACTIONS: Array<[string, TurnAction, Record<string, unknown>]> = [
  ['prose', { say: 'The weather in Paris is mild, 21 °C — nice! 🌤' }, {}],
  [
    'structured calls',
    {
      call: [
        { name: 'get_weather', arguments: { location: 'Paris' } },
        { name: 'get_weather', arguments: { location: 'Köln' } },
      ],
    },
    {},
  ],
  [
    'hermes leak',
    {
      leak: {
        format: 'hermes',
        calls: [{ name: 'get_weather', arguments: { location: 'Paris' } }],
        before: 'Sure: ',
      },
    },
    {},
  ],
  [
    'deepseek leak',
    { leak: { format: 'deepseek', calls: [{ name: 'get_weather', arguments: { location: 'Paris' } }] } },
    {},
  ],
  ['reasoning', { think: 'The user wants weather.', say: 'Calling now.' }, {}],
  ['think as text', { think: 'hmm', thinkAsText: true, say: 'ok' }, {}],
  [
    'truncated call',
    { call: [{ name: 'get_weather', arguments: { location: 'Paris', unit: 'celsius' } }], truncateAt: 12 },
    {},
  ],
  ['max_tokens', { say: 'one two three four five six' }, { max_tokens: 3 }],
  ['required forcing', { say: 'forced answer' }, { tool_choice: 'required' }],
];

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`${personality}: stream equals non-stream`, () => {
    let sim: Simulator;
    beforeAll(async () => {
      sim = await createSimulator({ personality });
    });
    afterAll(() => sim.close());

    it.each(ACTIONS)('%s', async (_name, action, extra) => {
      const body = {
        messages: [{ role: 'user', content: 'weather?' }],
        tools: [WEATHER_TOOL, FINAL_ANSWER_TOOL],
        ...extra,
      };
      const h = scenarioHeader(action);
      const whole = await chat(sim, body, h);
      const streamed = await chat(sim, { ...body, stream: true, stream_options: { include_usage: true } }, h);
      const msg = messageOf(whole);
      const acc = accumulate(sseEvents(streamed.text));
      expect(acc.role).toBe('assistant');
      expect(acc.content ?? '').toBe(msg.content ?? '');
      expect(acc.reasoning ?? null).toBe(msg.reasoning_content ?? null);
      const calls = (
        (msg.tool_calls as Array<{ function: { name: string; arguments: string } }> | undefined) ?? []
      ).map((c) => ({
        name: c.function.name,
        arguments: c.function.arguments,
      }));
      expect(acc.calls.map((c) => ({ name: c.name, arguments: c.arguments }))).toEqual(calls);
      expect(acc.finish).toBe((whole.json.choices as Array<{ finish_reason: string }>)[0]?.finish_reason);
      expect(acc.usage).toMatchObject({
        completion_tokens: (whole.json.usage as { completion_tokens: number }).completion_tokens,
      });
      expect(streamed.text.endsWith('data: [DONE]\n\n')).toBe(true);
    });
  });
}
