/**
 * Fair shares charge decode work (server/decode-meter.ts, admission.ts decodeCost): the real server
 * on loopback in front of the built-in simulator (vLLM), one upstream slot, two keys whose prompts
 * are alike. Key `long` asks for an 800-token answer, key `short` for one word. Charged by prompt
 * alone the two took turns, and each of short's turns waited behind one of long's answers; charged
 * the tokens generated, short's queued turns all go before long's next.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack, waitFor } from '../stack.js';

let stack: Stack | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

const KEYS = {
  long: 'sk-long-answers-fair-0001',
  short: 'sk-short-answers-fair-001',
  warm: 'sk-warm-answers-fair-0001',
};
/** toolproof on the simulator with one admission slot and the named keys of KEYS, forcing off. */
const oneSlot = (names: (keyof typeof KEYS)[]) =>
  startStack({
    file: {
      defaults: { forceToolUse: false },
      admission: { concurrency: 1, queueTimeoutMs: 30_000 },
      keys: names.map((name) => ({ name, key: KEYS[name] })),
    },
  });
/** An 800-word answer: 800 streamed chunks, usage ~1,000 completion tokens. */
const LONG_ANSWER = 'word '.repeat(800).trim();

function ask(
  origin: string,
  opts: {
    key: string;
    name: string;
    say?: string;
    holdMs?: number;
    stream?: boolean;
    n?: number;
    promptLogprobs?: number;
    signal?: AbortSignal;
  },
) {
  const agent = new Agent();
  agents.push(agent);
  return undiciFetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: agent,
    signal: opts.signal,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${opts.key}`,
      'x-sim-scenario': JSON.stringify({
        say: opts.say ?? 'ok',
        ...(opts.holdMs ? { delayMs: opts.holdMs } : {}),
      }),
    },
    body: JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: opts.name }],
      ...(opts.stream ? { stream: true } : {}),
      ...(opts.n ? { n: opts.n } : {}),
      ...(opts.promptLogprobs !== undefined ? { prompt_logprobs: opts.promptLogprobs } : {}),
    }),
  }).then(
    async (res) => {
      const text = await res.text();
      return { status: res.status, bytes: text.length };
    },
    () => ({ status: 0, bytes: 0 }),
  );
}

const upstreamOrder = (s: Stack): string[] =>
  s.sim.requests.map((r) => {
    const messages = (r.body as { messages?: Array<{ content?: unknown }> } | undefined)?.messages;
    return String(messages?.at(-1)?.content);
  });

/**
 * `h` (short's) holds the slot while l0 (long's long answer), l1 (long's next), s1, s2 and s3
 * (short's) queue, one after another; then h's client leaves. l0 goes first (its owner had
 * nothing served), and what it generated decides what follows it.
 */
async function longAnswerThenQueue(l0: {
  stream?: boolean;
  n?: number;
  say?: string;
  promptLogprobs?: number;
}) {
  stack = await oneSlot(['long', 'short']);
  const s = stack;
  const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
  const holder = new AbortController();
  const all = [ask(s.origin, { key: KEYS.short, name: 'h', holdMs: 60_000, signal: holder.signal })];
  await waitFor(() => s.sim.requests.length === 1, 20_000);
  for (const [i, opts] of [
    { key: KEYS.long, name: 'l0', say: LONG_ANSWER, ...l0 },
    { key: KEYS.long, name: 'l1' },
    { key: KEYS.short, name: 's1' },
    { key: KEYS.short, name: 's2' },
    { key: KEYS.short, name: 's3' },
  ].entries()) {
    all.push(ask(s.origin, opts));
    await waitFor(() => queued() === i + 1, 20_000);
  }
  holder.abort();
  const answers = await Promise.all(all);
  expect(answers.slice(1).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
  return upstreamOrder(s);
}

describe('fair shares charge the tokens a request generates, not only its prompt', () => {
  // By prompt alone: h l0 l1 s1 s2 s3 (l1 and s1 tied, l1 older).
  const FAIR = ['h', 'l0', 's1', 's2', 's3', 'l1'];

  it('a streamed long answer: its events are charged as they come', async () => {
    const order = await longAnswerThenQueue({ stream: true });
    expect(order, order.join(' ')).toEqual(FAIR);
  }, 60_000);

  it('a long answer read whole: its usage is charged before its slot goes back', async () => {
    const order = await longAnswerThenQueue({});
    expect(order, order.join(' ')).toEqual(FAIR);
  }, 60_000);

  it('n: 8 short answers cost eight times one (each choice generated)', async () => {
    // 8 choices of 100 words: ~1,000 tokens generated, as the long answer above.
    const order = await longAnswerThenQueue({ n: 8, say: 'word '.repeat(100).trim() });
    expect(order, order.join(' ')).toEqual(FAIR);
  }, 60_000);

  it('a whole answer its client leaves before its end: charged the time it held the slot', async () => {
    // A non-streamed answer's body (its usage) comes at its end: a key leaving each one just
    // before it held the slot for it all and was charged its prompt alone.
    stack = await oneSlot(['long', 'short', 'warm']);
    const s = stack;
    const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
    // The upstream's pace, learnt from an answer read whole (another key's: no share moved).
    expect((await ask(s.origin, { key: KEYS.warm, name: 'w', say: LONG_ANSWER, holdMs: 300 })).status).toBe(
      200,
    );
    const all = [ask(s.origin, { key: KEYS.short, name: 'h', holdMs: 3_000 })];
    await waitFor(() => s.sim.requests.length === 2, 20_000);
    const left = new AbortController();
    for (const [i, opts] of [
      { key: KEYS.long, name: 'l0', holdMs: 60_000, signal: left.signal },
      { key: KEYS.long, name: 'l1' },
      { key: KEYS.short, name: 's1' },
      { key: KEYS.short, name: 's2' },
      { key: KEYS.short, name: 's3' },
    ].entries()) {
      all.push(ask(s.origin, opts));
      await waitFor(() => queued() === i + 1, 20_000);
    }
    // l0 holds the slot about as long as w's whole answer took, and its client leaves.
    await waitFor(() => s.sim.requests.length === 3, 20_000);
    await new Promise((r) => setTimeout(r, 600));
    left.abort();
    await Promise.all(all);
    const order = upstreamOrder(s);
    // Charged nothing, long's l1 went before short's queued turns: w h l0 l1 s1 s2 s3.
    expect(order, order.join(' ')).toEqual(['w', ...FAIR]);
  }, 60_000);

  it("a long answer read whole with vLLM's prompt_logprobs, which vLLM writes after its usage", async () => {
    // The body's last 2 KiB were prompt_logprobs (the client's to ask for): no usage read, the
    // long answer charged nothing and long's l1 went before short's queued turns.
    const order = await longAnswerThenQueue({ promptLogprobs: 5 });
    expect(order, order.join(' ')).toEqual(FAIR);
  }, 60_000);
});
