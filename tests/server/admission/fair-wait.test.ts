/**
 * Fair shares within a class over real HTTP (server/admission-queue.ts, docs/operations.md): the
 * real server on loopback, two upstream slots, each request holding its slot a fixed time on the
 * built-in simulator. One client sends a burst, another then sends one request; in arrival order
 * that one waited for the whole burst (with 30: 28 requests queued ahead of it, 14 rounds of
 * the slots), with fair shares it takes the first slot that frees. Also: a request waiting in
 * its key's own queue (the key's `concurrency`) holds no slot of the replica.
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

const HOLD_MS = 100;

/** A chat request that holds its slot HOLD_MS (or `holdMs`), from `from`, with `key` if given. */
function ask(
  origin: string,
  opts: {
    key?: string;
    from?: string;
    name: string;
    holdMs?: number;
    signal?: AbortSignal;
    /** Characters of prompt after the name (a long prefill). */
    pad?: number;
  },
  done: string[],
) {
  const agent = new Agent({ localAddress: opts.from ?? '127.0.0.1' });
  agents.push(agent);
  return undiciFetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: agent,
    signal: opts.signal,
    headers: {
      'content-type': 'application/json',
      'x-sim-scenario': JSON.stringify({ say: 'ok', delayMs: opts.holdMs ?? HOLD_MS }),
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
    },
    body: JSON.stringify({
      model: 'm',
      messages: [
        { role: 'user', content: opts.pad ? `${opts.name} ${'word '.repeat(opts.pad / 5)}` : opts.name },
      ],
    }),
  }).then(
    async (res) => {
      await res.text();
      done.push(`${opts.name} ${res.status}`);
    },
    () => done.push(`${opts.name} gone`),
  );
}

async function metric(origin: string, pattern: RegExp): Promise<number | undefined> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const m = pattern.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** What the upstream got, in order: each request's name (its one message). */
const upstreamOrder = (s: Stack): string[] =>
  s.sim.requests.map((r) => {
    const messages = (r.body as { messages?: Array<{ content?: unknown }> } | undefined)?.messages;
    return String(messages?.at(-1)?.content).split(' ')[0]!;
  });

/**
 * `a` sends a burst of `n`, then `b` one request, every one lined up while the burst's first two
 * hold both slots (as long as the test wants: their clients leave to free them). Each step waits
 * for the one before to be queued (the gate's own counts), then the first slot frees, and only
 * then the second: the request that took the first is the third the upstream got. No wall-clock
 * pace: a loaded box took longer to bring a request to the gate than a slot was held, and b's
 * request then came after more of a's had ended than the test allowed.
 */
async function burstThenOne(
  s: Stack,
  a: { key?: string; from?: string },
  b: { key?: string; from?: string },
  n: number,
): Promise<{ done: string[]; upstream: string[] }> {
  const done: string[] = [];
  const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
  const holders = [new AbortController(), new AbortController()];
  const held = holders.map((c, i) =>
    ask(s.origin, { ...a, name: `a${i}`, holdMs: 60_000, signal: c.signal }, done),
  );
  await waitFor(() => s.sim.requests.length === 2, 20_000);
  const rest = Array.from({ length: n - 2 }, (_, i) => ask(s.origin, { ...a, name: `a${i + 2}` }, done));
  await waitFor(() => queued() === n - 2, 20_000);
  const last = ask(s.origin, { ...b, name: 'b' }, done);
  await waitFor(() => queued() === n - 1, 20_000);
  holders[0]!.abort();
  await waitFor(() => s.sim.requests.length === 3, 20_000);
  holders[1]!.abort();
  await Promise.all([...held, ...rest, last]);
  return { done, upstream: upstreamOrder(s) };
}

const KEYS = { alice: 'sk-alice-fair-wait-0001', bob: 'sk-bob-fair-wait-000001' };

describe('fair shares between clients of one class', () => {
  it("key B's one request takes the first free slot after key A sent 30 at once, not the 31st", async () => {
    stack = await startStack({
      file: {
        defaults: { forceToolUse: false },
        admission: { concurrency: 2, queueTimeoutMs: 30_000 },
        keys: [
          { name: 'alice', key: KEYS.alice },
          { name: 'bob', key: KEYS.bob },
        ],
      },
    });
    const { done, upstream } = await burstThenOne(stack, { key: KEYS.alice }, { key: KEYS.bob }, 30);
    // The first slot that freed went to bob (alice had one in flight, he none); in arrival order
    // it went to her third, and bob's was the 31st to reach the upstream.
    expect(upstream.slice(0, 4), upstream.join(' ')).toEqual(['a0', 'a1', 'b', 'a2']);
    expect(done.filter((d) => d.endsWith(' 200'))).toHaveLength(29);
    // The wait per key: bob's one request in its own series.
    expect(
      await metric(stack.origin, /toolproof_key_admission_queued_seconds_count\{key="bob"\} (\d+)/),
    ).toBe(1);
    expect(
      await metric(stack.origin, /toolproof_key_admission_queued_seconds_count\{key="alice"\} (\d+)/),
    ).toBe(30);
  }, 30_000);

  it('without keys, each client address is an owner: an open proxy is fair between machines too', async () => {
    stack = await startStack({
      file: { defaults: { forceToolUse: false }, admission: { concurrency: 2, queueTimeoutMs: 30_000 } },
    });
    const { upstream } = await burstThenOne(stack, { from: '127.0.0.1' }, { from: '127.0.0.2' }, 12);
    expect(upstream.slice(0, 4), upstream.join(' ')).toEqual(['a0', 'a1', 'b', 'a2']);
  }, 30_000);

  it('equal shares: the slot goes to the key served longest ago, not the one whose queued request is oldest', async () => {
    // An agent that sends its turns one after another (bob) has its next turn queued only once
    // its last has ended, so an agent that keeps requests queued (alice) had the oldest request
    // at every tie: with two slots, four loops of one key against one loop each of two others
    // took 2.2 times their share. Here alice holds the one slot and has two more queued before
    // bob's turn arrives; when hers ends, both have nothing in flight.
    stack = await startStack({
      file: {
        defaults: { forceToolUse: false },
        admission: { concurrency: 1, queueTimeoutMs: 30_000 },
        keys: [
          { name: 'alice', key: KEYS.alice },
          { name: 'bob', key: KEYS.bob },
        ],
      },
    });
    const s = stack;
    const done: string[] = [];
    const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
    const holder = new AbortController();
    const a0 = ask(s.origin, { key: KEYS.alice, name: 'a0', holdMs: 60_000, signal: holder.signal }, done);
    await waitFor(() => s.sim.requests.length === 1, 20_000);
    const a1 = ask(s.origin, { key: KEYS.alice, name: 'a1' }, done);
    await waitFor(() => queued() === 1, 20_000);
    const a2 = ask(s.origin, { key: KEYS.alice, name: 'a2' }, done);
    await waitFor(() => queued() === 2, 20_000);
    const b = ask(s.origin, { key: KEYS.bob, name: 'b' }, done);
    await waitFor(() => queued() === 3, 20_000);
    holder.abort();
    await Promise.all([a0, a1, a2, b]);
    expect(upstreamOrder(s), upstreamOrder(s).join(' ')).toEqual(['a0', 'b', 'a1', 'a2']);
  }, 30_000);

  it("a request waiting in its key's queue holds no slot of the replica: another key's takes it", async () => {
    stack = await startStack({
      file: {
        defaults: { forceToolUse: false },
        admission: { concurrency: 1, queueTimeoutMs: 30_000 },
        keys: [
          { name: 'alice', key: KEYS.alice, concurrency: 1 },
          { name: 'bob', key: KEYS.bob },
        ],
      },
    });
    const s = stack;
    const done: string[] = [];
    // a1 holds the replica's one slot until a2 and b are lined up behind it (at HOLD_MS, a1 could
    // end before b reached the gate on a loaded box: a2 then took the free slot first); its client
    // leaving then frees both slots, as burstThenOne's holders do.
    const holder = new AbortController();
    const a1 = ask(s.origin, { key: KEYS.alice, name: 'a1', holdMs: 60_000, signal: holder.signal }, done);
    await waitFor(() => s.sim.requests.length === 1);
    const a2 = ask(s.origin, { key: KEYS.alice, name: 'a2' }, done);
    await waitFor(() => s.app.toolproof.keyLimits.waiting('alice') === 1);
    // a2 waits for alice's slot, not the replica's: the replica has a1 and nobody queued.
    expect(s.app.toolproof.upstreams.all()[0]!.admissionLoad()).toEqual([{ active: 1, queued: 0, limit: 1 }]);
    const b = ask(s.origin, { key: KEYS.bob, name: 'b' }, done);
    // b queued for the replica while a1 still holds it
    await waitFor(() => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued === 1, 10_000);
    expect(done).toEqual([]);
    holder.abort();
    await Promise.all([a1, a2, b]);
    // a1's end frees both slots: the replica's goes to bob, queued for it; a2 then queues behind.
    expect(done).toEqual(['a1 gone', 'b 200', 'a2 200']);
    expect(upstreamOrder(s)).toEqual(['a1', 'b', 'a2']);
  }, 30_000);
});

describe('shares weighed by prompt size', () => {
  const PROMPTS = { long: 'sk-long-prompts-fair-0001', short: 'sk-short-prompts-fair-001' };
  const LONG = 90_000;
  const oneSlot = () =>
    startStack({
      file: {
        defaults: { forceToolUse: false },
        admission: { concurrency: 1, queueTimeoutMs: 30_000 },
        keys: [
          { name: 'long', key: PROMPTS.long },
          { name: 'short', key: PROMPTS.short },
        ],
      },
    });

  it('on a busy slot the short prompts go before the 90 KB ones, not one for one', async () => {
    // By request count the slot alternated: each 2 KB turn waited behind a 90 KB prefill.
    stack = await oneSlot();
    const s = stack;
    const done: string[] = [];
    const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
    const holder = new AbortController();
    const long = { key: PROMPTS.long, pad: LONG };
    const all = [ask(s.origin, { ...long, name: 'l0', holdMs: 60_000, signal: holder.signal }, done)];
    await waitFor(() => s.sim.requests.length === 1, 20_000);
    for (const [i, opts] of [
      { ...long, name: 'l1' },
      { ...long, name: 'l2' },
      { key: PROMPTS.short, name: 's1' },
      { key: PROMPTS.short, name: 's2' },
      { key: PROMPTS.short, name: 's3' },
    ].entries()) {
      all.push(ask(s.origin, opts, done));
      await waitFor(() => queued() === i + 1, 20_000);
    }
    holder.abort();
    await Promise.all(all);
    expect(upstreamOrder(s), upstreamOrder(s).join(' ')).toEqual(['l0', 's1', 's2', 's3', 'l1', 'l2']);
  }, 60_000);

  it('an agent of long prompts keeps its charge between its turns (its record goes while it has none)', async () => {
    // One long turn at a time: once it ended, its owner was new again at its next turn, which
    // then went before the short prompts queued before it.
    stack = await oneSlot();
    const s = stack;
    const done: string[] = [];
    const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
    const holders = [new AbortController(), new AbortController()];
    const l0 = ask(
      s.origin,
      { key: PROMPTS.long, pad: LONG, name: 'l0', holdMs: 60_000, signal: holders[0]!.signal },
      done,
    );
    await waitFor(() => s.sim.requests.length === 1, 20_000);
    const s1 = ask(
      s.origin,
      { key: PROMPTS.short, name: 's1', holdMs: 60_000, signal: holders[1]!.signal },
      done,
    );
    await waitFor(() => queued() === 1, 20_000);
    const s2 = ask(s.origin, { key: PROMPTS.short, name: 's2' }, done);
    await waitFor(() => queued() === 2, 20_000);
    holders[0]!.abort();
    await waitFor(() => s.sim.requests.length === 2, 20_000);
    // The long agent's next turn, once its last has ended: it has nothing in flight or queued.
    const l1 = ask(s.origin, { key: PROMPTS.long, pad: LONG, name: 'l1' }, done);
    await waitFor(() => queued() === 2, 20_000);
    holders[1]!.abort();
    await Promise.all([l0, s1, s2, l1]);
    expect(upstreamOrder(s), upstreamOrder(s).join(' ')).toEqual(['l0', 's1', 's2', 'l1']);
  }, 60_000);
});
