/**
 * A user turn longer than the model's window by itself (an agent user pastes 22k tokens into a 16k
 * window), through the real server on every front door, streamed and not. It was relayed whole:
 * the backend refused it, and pi and Cline keep the refused turn in their history, so their
 * compaction had nothing to summarise and every later turn was refused too. Now that turn is cut
 * to its head and tail with a marker saying so (policies/truncation cutTurnsOverWindow), and the
 * next turn, which carries it again, sends the same cut bytes. A turn whose older messages could be
 * left out to fit is still the backend's context_length_exceeded (the agent's cue to compact), and
 * `truncation: "disabled"` is honoured. The simulator enforces a 16k window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

/** About 22k of the simulator's tokens (4 characters a token) of numbered English lines. */
const paste = Array.from(
  { length: 1100 },
  (_, i) => `line ${i}: the log the user pasted, long enough to fill the window.`,
).join('\n');
const say = { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) };
const SYSTEM = 'You are a coding agent.';
const MARKER =
  /\[\.\.\. toolproof left out \d+ of this message's \d+ characters \(\d+ lines\) to fit the model's context window \.\.\.\]/;
type Sent = { messages: Array<{ role: string; content: unknown }> };
/** The text of a message as sent upstream (a string or its text parts). */
const textOf = (m: { content: unknown } | undefined) =>
  typeof m?.content === 'string'
    ? m.content
    : ((m?.content ?? []) as Array<{ text?: string }>).map((p) => p.text ?? '').join('');

type Turn = { role: 'user' | 'assistant'; content: string };
/** One turn on `api`, answered 200 with its text, or the error's status and code. */
async function send(
  stack: Stack,
  api: 'chat' | 'responses' | 'messages',
  stream: boolean,
  turns: Turn[],
  extra: Record<string, unknown> = {},
): Promise<{ status: number; text: string }> {
  const headers = { 'content-type': 'application/json', authorization: 'Bearer x', ...say };
  let url: string;
  let body: Record<string, unknown>;
  if (api === 'chat') {
    url = '/v1/chat/completions';
    body = { model: 'sim', stream, messages: [{ role: 'system', content: SYSTEM }, ...turns], ...extra };
  } else if (api === 'responses') {
    url = '/v1/responses';
    body = { model: 'sim', stream, store: false, instructions: SYSTEM, input: turns, ...extra };
  } else {
    url = '/v1/messages';
    Object.assign(headers, { 'anthropic-version': '2023-06-01' });
    body = { model: 'sim', stream, max_tokens: 256, system: SYSTEM, messages: turns, ...extra };
  }
  const res = await fetch(`${stack.origin}${url}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

describe('a user turn over a 16k window by itself', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'vllm', maxModelLen: 16384, enforceWindow: true } as never,
    });
  });
  afterAll(() => stack.close());
  const lastSent = () => stack.sim.requests.at(-1)!.body as Sent;

  for (const api of ['chat', 'responses', 'messages'] as const)
    for (const stream of [false, true])
      it(`${api}, ${stream ? '' : 'not '}streamed: answered with the turn cut, the next turn with the same bytes`, async () => {
        const first = await send(stack, api, stream, [{ role: 'user', content: paste }]);
        expect(first.status, first.text.slice(0, 300)).toBe(200);
        expect(first.text).toContain('ok');
        const cut = textOf(lastSent().messages.at(-1));
        expect(cut).toMatch(MARKER);
        expect(cut.startsWith('line 0: ')).toBe(true);
        expect(cut.endsWith('line 1099: the log the user pasted, long enough to fill the window.')).toBe(
          true,
        );
        // pi's next turn carries the pasted turn again: the same cut bytes, answered.
        const next = await send(stack, api, stream, [
          { role: 'user', content: paste },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'And what does it say?' },
        ]);
        expect(next.status, next.text.slice(0, 300)).toBe(200);
        const sent = lastSent().messages;
        expect(textOf(sent.find((m) => m.role === 'user'))).toBe(cut);
        expect(textOf(sent.at(-1))).toBe('And what does it say?');
      });

  it('counts the cut turns by kind', async () => {
    const text = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(text).toMatch(/toolproof_degraded_content_total\{model="sim",api="chat",kind="turn-cut"\} [1-9]/);
  });

  it('older messages that could be left out to fit: still context_length_exceeded (the cue to compact)', async () => {
    const third = paste.slice(0, Math.floor(paste.length / 3));
    const turns: Turn[] = [
      { role: 'user', content: third },
      { role: 'assistant', content: third },
      { role: 'user', content: third },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'And then?' },
    ];
    for (const api of ['chat', 'responses'] as const) {
      const r = await send(stack, api, false, turns);
      expect(r.status).toBe(400);
      expect(r.text).toContain('context_length_exceeded');
    }
  });

  it('truncation: "disabled" is honoured: the refusal', async () => {
    for (const api of ['chat', 'responses'] as const) {
      const r = await send(stack, api, false, [{ role: 'user', content: paste }], { truncation: 'disabled' });
      expect(r.status).toBe(400);
      expect(r.text).toContain('context_length_exceeded');
    }
  });
});

/**
 * A paste of 0.85 of the window after an earlier exchange: together over the window, the paste
 * alone fitting (14k of the simulator's tokens in 16k). The turn test judged it by three bytes a
 * token, stricter than any real tokenizer (the simulator's: 4 characters), and cut it, where the
 * agent's compaction of the exchange would have kept it whole. Now it is judged by the bytes a
 * token the backend's refusal counted (vLLM's "input tokens", llama-server's n_prompt_tokens):
 * the refusal is relayed (the cue to compact), the same on the next turn that carries it, and the
 * compacted conversation goes with the paste whole.
 */
describe("a paste under the window, judged by the refusal's count", () => {
  /** ~14.7k of the simulator's tokens: 970 numbered lines of ~61 characters. */
  const near = Array.from(
    { length: 970 },
    (_, i) => `line ${i}: the log the user pasted, nearly filling the window.`,
  ).join('\n');
  const earlier: Turn[] = [
    { role: 'user', content: 'Read the notes.' },
    { role: 'assistant', content: 'note '.repeat(3000) },
  ];
  for (const personality of ['vllm', 'llama-server'] as const)
    describe(personality, () => {
      let stack: Stack;
      beforeAll(async () => {
        stack = await startStack({
          sim: { personality, maxModelLen: 16384, nCtx: 16384, enforceWindow: true } as never,
        });
      });
      afterAll(() => stack.close());

      for (const api of ['chat', 'messages'] as const)
        it(`${api}: refused whole (not cut), the next turn too, the compacted one answered with the paste whole`, async () => {
          const before = stack.sim.requests.length;
          const first = await send(stack, api, api === 'messages', [
            ...earlier,
            { role: 'user', content: near },
          ]);
          expect(first.status, first.text.slice(0, 300)).toBe(400);
          expect(first.text).toMatch(api === 'chat' ? /context_length_exceeded/ : /prompt is too long/);
          // What reached the backend: the paste whole, every time.
          const sent = stack.sim.requests.slice(before).map((r) => r.body as Sent);
          expect(sent.length).toBeGreaterThan(0);
          for (const s of sent) expect(textOf(s.messages.at(-1))).toBe(near);
          // pi and Cline keep the refused turn: the next one carries it, judged the same.
          const again = stack.sim.requests.length;
          const next = await send(stack, api, false, [
            ...earlier,
            { role: 'user', content: near },
            { role: 'user', content: 'What does it say?' },
          ]);
          expect(next.status).toBe(400);
          for (const r of stack.sim.requests.slice(again))
            expect(textOf((r.body as Sent).messages.at(-2))).toBe(near);
          // The agent compacts the exchange: the paste fits beside the summary, whole.
          const compacted = await send(stack, api, false, [
            { role: 'user', content: 'Summary: the user asked to read the notes; they were read.' },
            { role: 'assistant', content: 'ok' },
            { role: 'user', content: near },
          ]);
          expect(compacted.status, compacted.text.slice(0, 300)).toBe(200);
          expect(textOf(lastSentOf(stack).messages.at(-1))).toBe(near);
        });

      it("a later refusal's count does not judge the paste again: the session's first count does", async () => {
        // A CJK note after the paste (32k characters, 96 KB, a token each): a refusal of the whole
        // counts ~3.4 bytes a token, by which the paste would be over; by the first count, ~3.9,
        // it is not. The note itself, denser than prose, is judged by the old bound and cut.
        const note = '日志内容很长'.repeat(5400);
        const first = await send(stack, 'chat', false, [...earlier, { role: 'user', content: near }]);
        expect(first.status).toBe(400);
        const from = stack.sim.requests.length;
        const next = await send(stack, 'chat', false, [
          ...earlier,
          { role: 'user', content: near },
          { role: 'user', content: note },
        ]);
        expect(next.status).toBe(400);
        const sent = stack.sim.requests.slice(from).map((r) => r.body as Sent);
        expect(sent.length).toBe(2);
        for (const s of sent) expect(textOf(s.messages.at(-2))).toBe(near);
        expect(textOf(sent[1]!.messages.at(-1))).toMatch(MARKER);
      });
    });
});

const lastSentOf = (stack: Stack) => stack.sim.requests.at(-1)!.body as Sent;
