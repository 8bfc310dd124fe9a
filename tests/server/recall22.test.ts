/**
 * recall22's reading through the real server on loopback, with the openai SDK, streamed (one
 * character a chunk) and not, one upstream request each: Qwen2.5-7B's Hermes block whose arguments
 * sit in a `function_call` object beside a stray `"kwargs{": {}`, its name twice and one brace too
 * many (gpustack/llama-box#16). It reached the client as text before.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';

const BLOCK =
  '<tool_call>\n{"name":"get_temperature","function_call":{"args":{"location":"ShenZhen"},"kwargs{":{}},"name":"get_temperature"}}\n</tool_call>';
const p = proxyInFrontOf(textCharByChar(BLOCK));
const place = (name: string) => ({
  name,
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
});
type Call = { function: { name: string; arguments: string } };

describe('recall22 reading through the server', () => {
  for (const stream of [false, true])
    it(`arguments held beside a junk key (llama-box#16): chat completions (stream: ${stream})`, async () => {
      const openai = new OpenAI({ baseURL: `${p.proxy.origin}/v1`, apiKey: 'x', maxRetries: 0 });
      const before = p.upstream.requests.length;
      const params = {
        model: 'm1',
        messages: [{ role: 'user' as const, content: 'temperature in ShenZhen?' }],
        tools: [place('get_temperature'), place('get_weather')].map((f) => ({
          type: 'function' as const,
          function: f,
        })),
      };
      let m: OpenAI.Chat.Completions.ChatCompletionMessage;
      let finish: string | null;
      if (stream) {
        const runner = openai.chat.completions.stream(params);
        for await (const _ of runner) {
          // drained
        }
        const done = (await runner.finalChatCompletion()).choices[0]!;
        m = done.message;
        finish = done.finish_reason;
      } else {
        const done = (await openai.chat.completions.create(params)).choices[0]!;
        m = done.message;
        finish = done.finish_reason;
      }
      const calls = (m.tool_calls ?? []).map((c) => [
        (c as Call).function.name,
        JSON.parse((c as Call).function.arguments),
      ]);
      expect(calls).toEqual([['get_temperature', { location: 'ShenZhen' }]]);
      expect(m.content ?? null).toBeNull();
      expect(finish).toBe('tool_calls');
      expect(p.upstream.requests.length - before).toBe(1);
    });
});
