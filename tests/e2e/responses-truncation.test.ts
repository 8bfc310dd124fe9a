/**
 * The Responses API's `truncation: "auto"` (the Agents SDK's ModelSettings.truncation): drop the
 * oldest items when the conversation is past the model's window. toolproof ignored it, so a
 * session whose own messages grew past the window (here CJK text, about a token a character: under
 * six bytes a token, not known over the window before the backend says so) was the backend's
 * refusal on that turn and on every later one. Through the real server and the openai SDK, against
 * both backends with an 8k window (simulator/context-window.ts counts CJK as those tokenizers do),
 * streamed and not: every turn answered, the oldest messages left out upstream with a note, the
 * refusal paid once (later turns go cut from the start), the field never sent upstream. Without
 * the field the refusal is the API's context_length_exceeded, as on OpenAI's.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

/** `lines` lines of Chinese text (~30 characters, ~30 tokens each), numbered by turn. */
const cjk = (lines: number, turn: number) =>
  Array.from(
    { length: lines },
    (_, i) => `第${turn}轮第${i}行：这是一段很长的中文说明，用来填满模型的上下文窗口。`,
  ).join('\n');
const say = { headers: { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) } };
type Body = { messages: Array<{ role: string; content: unknown }>; truncation?: unknown };

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`truncation auto on ${personality}, an 8k window`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({
        sim: { personality, maxModelLen: 8192, nCtx: 8192, enforceWindow: true } as never,
      });
    });
    afterAll(() => stack.close());

    it('twelve turns of CJK text past the window: each answered, the oldest left out with a note', async () => {
      const input: OpenAI.Responses.ResponseInputItem[] = [
        { role: 'developer', content: 'Answer in Chinese.' },
      ];
      const attempts: number[] = [];
      for (let turn = 0; turn < 12; turn++) {
        if (turn > 0) input.push({ role: 'assistant', content: cjk(10, turn) });
        input.push({ role: 'user', content: cjk(30, turn) });
        const before = stack.sim.requests.length;
        const body = { model: 'sim', input, truncation: 'auto' as const };
        const r =
          turn % 2 === 0
            ? await stack.client.responses.create(body, say)
            : await stack.client.responses.stream(body, say).finalResponse();
        expect(r.status, `turn ${turn}`).toBe('completed');
        expect(r.truncation).toBe('auto');
        const sent = stack.sim.requests.slice(before).map((q) => q.body as Body);
        attempts.push(sent.length);
        for (const b of sent) expect(b.truncation).toBeUndefined();
        const last = sent.at(-1)!;
        // The developer message and the turn's own message always go.
        expect(last.messages[0]).toEqual({ role: 'system', content: 'Answer in Chinese.' });
        expect(last.messages.at(-1)?.content).toBe(cjk(30, turn));
      }
      // Past the window once (the backend's refusal, then the request cut), then cut from the start.
      const first = attempts.indexOf(2);
      expect(first, attempts.join(',')).toBeGreaterThan(0);
      expect(
        attempts.slice(first + 1).every((n) => n === 1),
        attempts.join(','),
      ).toBe(true);
      const lastSent = stack.sim.requests.at(-1)!.body as Body;
      expect(String(lastSent.messages[1]?.content)).toMatch(
        /^\[toolproof left out the \d+ oldest messages of this conversation to fit the model's context window \(truncation: auto\)\]$/,
      );
    });

    it('without truncation the refusal is context_length_exceeded, as on OpenAI', async () => {
      // Turns that each fit (one over the window by itself is cut: turn-over-window.test.ts).
      const input = Array.from({ length: 14 }, (_, turn) => [
        { role: 'user' as const, content: cjk(30, turn) },
        { role: 'assistant' as const, content: cjk(10, turn) },
      ]).flat();
      const err = await stack.client.responses
        .create({ model: 'sim', input: [...input, { role: 'user', content: 'and now?' }] }, say)
        .catch((e: unknown) => e as { status?: number; code?: string });
      expect(err).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    });

    it('on chat completions too, as a field toolproof reads', async () => {
      const messages = Array.from({ length: 14 }, (_, turn) => [
        { role: 'user' as const, content: cjk(30, turn) },
        { role: 'assistant' as const, content: cjk(10, turn) },
      ]).flat();
      messages.push({ role: 'user', content: 'and now?' });
      const c = await stack.client.chat.completions.create(
        { model: 'sim', messages, truncation: 'auto' } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
        say,
      );
      expect(c.choices[0]?.message.content).toBe('ok');
    });
  });
}
