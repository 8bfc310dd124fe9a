/**
 * recall20: a short sentence inside `<tool_call>` before the call is read: the call, the sentence
 * as content, one upstream request. Hermes' JSON,
 * `<tool_call>Sure, checking now. {"name": "get_weather", …}</tool_call>`, reached the client as
 * text before; Qwen3-Coder's `<tool_call>Sure, checking now.\n<function=get_weather>…` gave the
 * call with `<tool_call>` and the sentence as content, beside an unrecovered leak (GLM's reading
 * of the tag). Through the real server on loopback with the openai and Anthropic SDKs, streamed
 * (one character a chunk) and not. Source of the texts: the open cases docs/recall.md's
 * sessions19 section left.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';

const HERMES =
  '<tool_call>Sure, checking now. {"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const QWEN =
  '<tool_call>Sure, checking now.\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>';
const pair = proxyInFrontOf(textCharByChar(HERMES));
const qwen = proxyInFrontOf(textCharByChar(QWEN));
const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const upstreamCalls = () => pair.upstream.requests.length;
type Call = { function: { name: string; arguments: string } };

describe('a sentence before the call inside <tool_call>: read, the sentence content', () => {
  for (const [family, p, stream] of [
    ['Hermes', pair, false],
    ['Hermes', pair, true],
    ['Qwen3-Coder', qwen, false],
    ['Qwen3-Coder', qwen, true],
  ] as const) {
    it(`${family}: chat completions (stream: ${stream})`, async () => {
      const openai = () => new OpenAI({ baseURL: `${p.proxy.origin}/v1`, apiKey: 'x', maxRetries: 0 });
      const upstreamCalls = () => p.upstream.requests.length;
      const before = upstreamCalls();
      const params = {
        model: 'm1',
        messages: [{ role: 'user' as const, content: 'weather in Paris?' }],
        tools: [{ type: 'function' as const, function: { name: 'get_weather', parameters: schema } }],
      };
      let m: OpenAI.Chat.Completions.ChatCompletionMessage;
      if (stream) {
        const runner = openai().chat.completions.stream(params);
        for await (const _ of runner) {
          // drained
        }
        m = (await runner.finalChatCompletion()).choices[0]!.message;
      } else m = (await openai().chat.completions.create(params)).choices[0]!.message;
      const calls = (m.tool_calls ?? []).map((c) => [
        (c as Call).function.name,
        JSON.parse((c as Call).function.arguments),
      ]);
      expect(calls).toEqual([['get_weather', { city: 'Paris' }]]);
      expect(m.content).toBe('Sure, checking now.');
      expect(upstreamCalls() - before).toBe(1);
    });
  }

  it('Anthropic Messages: a text block and a tool_use block, one upstream request', async () => {
    const before = upstreamCalls();
    const client = new Anthropic({ baseURL: pair.proxy.origin, apiKey: 'x', maxRetries: 0 });
    const msg = await client.messages.create({
      model: 'm1',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [{ name: 'get_weather', input_schema: schema as Anthropic.Tool.InputSchema }],
    });
    expect(
      msg.content.map((b) =>
        b.type === 'text'
          ? ['text', b.text]
          : b.type === 'tool_use'
            ? ['tool_use', b.name, b.input]
            : [b.type],
      ),
    ).toEqual([
      ['text', 'Sure, checking now.'],
      ['tool_use', 'get_weather', { city: 'Paris' }],
    ]);
    expect(upstreamCalls() - before).toBe(1);
  });
});
