/**
 * A client's `stop` list beside tools (forced tool use). Upstream, both backends match stop
 * strings on the text the model writes (simulator/generate.ts, after ../shared/wire llama-server
 * chat_plain_stop_sequence), which is a tool call's JSON while toolproof forces: a "```" in a file
 * the model writes cut the Write call short (invalid arguments, finish "length"), and the answer
 * came back as if cut by max_tokens. Through the real server and the official SDKs, on both
 * backends, a session of three turns, streamed and not: the call whole, the answer ended before
 * the stop string with finish "stop", the same both ways; Anthropic's stop_sequences answer
 * stop_reason "stop_sequence".
 */
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

const write = {
  type: 'function' as const,
  function: {
    name: 'Write',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
};
const file = 'Use:\n```sh\nls\n```\n';
const script = JSON.stringify([
  { call: [{ name: 'Write', arguments: { path: 'a.md', content: file } }] },
  { say: 'Done. Run:\n```sh\nls\n```\nThen look.' },
  { say: 'First part.\n\nSecond part.' },
]);

type Msg = OpenAI.Chat.ChatCompletionMessageParam;

/** One choice as the client sees it, streamed (assembled by the SDK) or not. */
async function turn(stack: Stack, messages: Msg[], stop: string[], stream: boolean) {
  const body = { model: 'sim', messages, tools: [write], stop };
  const headers = { headers: { 'x-sim-scenario': script } };
  const c = stream
    ? await stack.client.chat.completions.stream(body, headers).finalChatCompletion()
    : await stack.client.chat.completions.create(body, headers);
  const choice = c.choices[0]!;
  return {
    content: choice.message.content ?? '',
    finish: choice.finish_reason,
    calls: (choice.message.tool_calls ?? []).map((t) =>
      t.type === 'function' ? { name: t.function.name, arguments: t.function.arguments } : t,
    ),
    message: choice.message,
  };
}

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`stop beside tools on ${personality}`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality } });
    });
    afterAll(() => stack.close());

    it('three turns: the call whole, each answer ended at the stop, streamed as not', async () => {
      const seen: Record<string, unknown[]> = {};
      for (const stream of [false, true]) {
        const messages: Msg[] = [{ role: 'user', content: 'write a.md, then tell me' }];
        const got: unknown[] = [];
        const one = await turn(stack, messages, ['```'], stream);
        expect(one.calls).toEqual([
          { name: 'Write', arguments: JSON.stringify({ path: 'a.md', content: file }) },
        ]);
        expect(one.finish).toBe('tool_calls');
        const id = one.message.tool_calls?.[0]?.id ?? '';
        messages.push(one.message as Msg, { role: 'tool', tool_call_id: id, content: 'written' });
        const two = await turn(stack, messages, ['```'], stream);
        expect(two).toMatchObject({ content: 'Done. Run:\n', finish: 'stop', calls: [] });
        messages.push(two.message as Msg, { role: 'user', content: 'and then?' });
        // A stop string JSON escapes inside the call: it never matched upstream.
        const three = await turn(stack, messages, ['\n\n'], stream);
        expect(three).toMatchObject({ content: 'First part.', finish: 'stop' });
        for (const t of [one, two, three]) got.push({ ...t, message: undefined, calls: t.calls });
        seen[String(stream)] = got;
      }
      expect(seen.true).toEqual(seen.false);
      const sent = stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
      expect(sent).toHaveLength(6);
      for (const r of sent) expect((r.body as { stop?: unknown }).stop).toBeUndefined();
    });

    it("Anthropic's stop_sequences: stop_reason stop_sequence, streamed and not", async () => {
      const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'k', maxRetries: 0, timeout: 15_000 });
      const body = {
        model: 'sim',
        max_tokens: 1024,
        stop_sequences: ['```'],
        tools: [{ name: 'Write', input_schema: write.function.parameters as Anthropic.Tool.InputSchema }],
        messages: [{ role: 'user' as const, content: 'tell me' }],
      };
      const headers = { headers: { 'x-sim-scenario': JSON.stringify({ say: 'Run:\n```sh\nls\n```' }) } };
      const whole = await anthropic.messages.create(body, headers);
      const streamed = await anthropic.messages.stream(body, headers).finalMessage();
      for (const m of [whole, streamed]) {
        expect(m.content).toEqual(
          [{ type: 'text', text: 'Run:\n', citations: null }].map((b) =>
            expect.objectContaining({ type: b.type, text: b.text }),
          ),
        );
        expect(m.stop_reason).toBe('stop_sequence');
        expect(m.stop_sequence).toBe('```');
      }
    });
  });
}
