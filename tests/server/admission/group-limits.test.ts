/**
 * Key limits and the replica's slots with TOOLPROOF_WORKERS=2 (the real process: server/main.ts in
 * a child, two workers in front of one simulator, real HTTP on fresh connections, which the
 * primary spreads over the workers): a key's `concurrency: 3` and `requestsPerMinute: 3` mean 3
 * for the group, and admission's `concurrency: 3` keeps the GPU's 3 slots busy whichever worker
 * the requests came in on, shared fairly between keys. Before, each worker held the configured
 * numbers divided by the workers (1 each): 2 for the group, and a third slot idle.
 */
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest, hiChat } from '../../support/toolproof-process.js';

/** How long the simulator takes over each answer: the slot is held that long. */
const HOLD_MS = 1_500;

/** The token limit of the key `tokens`. */
const TOKENS_PER_MINUTE = 120;

/** The text of a request answered at once (a limit that counts requests, not their time). */
const QUICK = 'quick';

const cluster = clusterOnYaml(
  {
    personality: 'vllm',
    scenario: (turn) =>
      /^d[hls]\d?$/.test(turn.lastUserText)
        ? decodeScenario(turn.lastUserText)
        : turn.lastUserText === QUICK || /^[ls]\d/.test(turn.lastUserText)
          ? { say: 'done', ...(turn.lastUserText.startsWith('l0') ? { delayMs: 60_000 } : {}) }
          : { say: 'done', delayMs: HOLD_MS },
  },
  (simUrl) => `
defaults:
  forceToolUse: false
admission:
  concurrency: 3
models:
  m:
    upstream: ${simUrl}
  # The same simulator under another name: an upstream (and a queue) of its own, with one slot.
  one:
    upstream: ${simUrl.replace('127.0.0.1', 'localhost')}
    admission: { concurrency: 1 }
keys:
  - { name: long, key: sk-long-0123456789 }
  - { name: short, key: sk-short-0123456789 }
  - { name: alice, key: sk-alice-0123456789 }
  - { name: bob, key: sk-bob-0123456789 }
  - { name: capped, key: sk-capped-0123456789, concurrency: 3, queueTimeoutMs: 0 }
  - { name: minute, key: sk-minute-0123456789, requestsPerMinute: 3 }
  - { name: tokens, key: sk-tokens-0123456789, tokensPerMinute: ${TOKENS_PER_MINUTE} }
`,
);

/**
 * A request under `key` that holds the one slot until its client leaves (a connection of its own,
 * closed then): release() aborts it and waits for it to end.
 */
function holdSlot(key: string, body: string): { release(): Promise<void> } {
  const holder = new Client(cluster.origin);
  const held = new AbortController();
  const done = holder
    .request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
      signal: held.signal,
    })
    .then(
      (r) => r.body.text(),
      () => undefined,
    );
  return {
    async release() {
      held.abort();
      await done;
      await holder.close();
    },
  };
}

/** The decode-work case's requests: dh holds the slot, dl0 writes a long answer, the rest a word. */
function decodeScenario(name: string) {
  if (name === 'dh') return { say: 'done', delayMs: 60_000 };
  return { say: name === 'dl0' ? 'word '.repeat(800).trim() : 'done' };
}

/** One chat request of `key` on a connection of its own; its status, id and when it was answered. */
async function ask(key: string, text = 'hi'): Promise<{ status: number; reqId: string; at: number }> {
  const body =
    text === 'hi' ? hiChat('m') : JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] });
  const res = await freshRequest(cluster.origin, { key, body });
  return { status: res.status, reqId: String(res.headers['x-request-id']), at: performance.now() };
}

const metrics = async (): Promise<string> =>
  (await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' })).text;

/** The sum of a metric's samples whose labels include `labels` (the group's, through the primary). */
const sample = (text: string, name: string, labels: string): number =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

/** The pids of the workers that logged these requests. */
const workersOf = async (ids: string[]) =>
  new Set(
    await Promise.all(
      ids.map(
        async (id) => (await cluster.proc.waitFor((l) => l.reqId === id && l.msg === 'request', 10_000)).pid,
      ),
    ),
  );

describe('limits with two workers are the group’s', () => {
  it("a key's concurrency of 3 lets 3 through at once, whichever workers they reach", async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask('capped')));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 429, 429, 429]);
    // Both workers took some: the limit held across them, not within one.
    expect((await workersOf(answers.map((a) => a.reqId))).size).toBe(2);
    const m = await metrics();
    expect(sample(m, 'toolproof_key_refusals_total', 'key="capped",reason="concurrency"')).toBe(3);
  }, 30_000);

  it("a key's 3 requests a minute are 3 for the group", async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => ask('minute', QUICK)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 429, 429]);
  }, 30_000);

  it("a key's tokens a minute are the group's: counted on one worker, refused on the other", async () => {
    const used: number[] = [];
    const workers = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const res = await freshRequest(cluster.origin, {
        key: 'tokens',
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: QUICK }] }),
      });
      if (res.status === 429) break;
      expect(res.status, res.text).toBe(200);
      used.push((JSON.parse(res.text) as { usage: { total_tokens: number } }).usage.total_tokens);
      workers.add(
        Number(
          (
            await cluster.proc.waitFor(
              (l) => l.reqId === res.headers['x-request-id'] && l.msg === 'request',
              10_000,
            )
          ).pid,
        ),
      );
    }
    const total = used.reduce((a, b) => a + b, 0);
    // Refused once the group's minute reached the limit: a request is let in while the minute is
    // under it, so the last one may pass it by its own tokens (one more for a count still on its
    // way from the worker that served it). Counted per worker, the 429 came near twice the limit.
    expect(workers.size, `${used.join(' ')}`).toBe(2);
    expect(total).toBeGreaterThanOrEqual(TOKENS_PER_MINUTE);
    expect(total - used.at(-1)! - (used.at(-2) ?? 0)).toBeLessThan(TOKENS_PER_MINUTE);
  }, 60_000);

  it("the replica's 3 slots are the group's, and another key's request goes next", async () => {
    // alice: 6 at once, over both workers; 3 hold the slots, 3 wait.
    const flood = Array.from({ length: 6 }, () => ask('alice'));
    const deadline = Date.now() + 10_000;
    let queued = 0;
    let during = '';
    while (Date.now() < deadline) {
      during = await metrics();
      queued = sample(during, 'toolproof_admission_queue_depth', 'class="normal"');
      if (queued >= 3) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // The group's metrics, whichever worker answered: 3 of alice's wait, 3 hold the slots.
    expect(queued).toBe(3);
    expect(sample(during, 'toolproof_key_admission_inflight', 'key="alice"')).toBe(3);
    const bob = await ask('bob');
    const alice = await Promise.all(flood);
    expect(bob.status).toBe(200);
    expect(alice.every((a) => a.status === 200)).toBe(true);
    // Three of alice's took a slot at once (before: one per worker, two): the log line's queuedMs.
    const waited = alice.map(
      (a) =>
        (
          cluster.proc.lines.find((l) => l.reqId === a.reqId && l.msg === 'request')?.harness as {
            queuedMs?: number;
          }
        )?.queuedMs,
    );
    expect(waited.filter((ms) => ms === 0)).toHaveLength(3);
    // bob's one request took the first slot that freed, before alice's last waiting ones.
    expect(alice.filter((a) => a.at > bob.at).length).toBeGreaterThanOrEqual(1);
    const m = await metrics();
    expect(sample(m, 'toolproof_admission_queue_depth', 'class="normal"')).toBe(0);
    expect(sample(m, 'toolproof_key_admission_inflight', 'key="alice"')).toBe(0);
    expect(sample(m, 'toolproof_key_admission_queued_seconds_count', 'key="alice"')).toBe(6);
  }, 40_000);

  it('a worker that dies gives back the slots its requests held', async () => {
    const pids = cluster.proc.lines
      .filter((l) => typeof l.msg === 'string' && /^worker \d+ \(pid \d+\) listening$/.test(l.msg))
      .map((l) => Number(/pid (\d+)/.exec(String(l.msg))![1]));
    // capped's 3 slots taken, over both workers; one worker dies with its share of them.
    const held = Array.from({ length: 3 }, () => ask('capped').catch(() => undefined));
    await new Promise((r) => setTimeout(r, HOLD_MS / 3));
    process.kill(pids[0]!, 'SIGKILL');
    await Promise.all(held);
    // Had the dead worker's slots stayed taken, at most 2 of these would pass (the rest: 429).
    const again = await Promise.all(Array.from({ length: 3 }, () => ask('capped')));
    expect(again.map((a) => a.status)).toEqual([200, 200, 200]);
  }, 40_000);
});

describe('shares weighed by prompt size, with two workers', () => {
  it("the primary's queue weighs each request by the body its worker sends: short prompts before 90 KB ones", async () => {
    const queued = async () =>
      sample(await metrics(), 'toolproof_admission_queue_depth', 'upstream="http://localhost');
    const body = (name: string, pad = 0) =>
      JSON.stringify({
        model: 'one',
        messages: [{ role: 'user', content: pad ? `${name} ${'word '.repeat(pad / 5)}` : name }],
      });
    // l0 holds the one slot until its client leaves (a connection of its own, closed then).
    const l0 = holdSlot('sk-long-0123456789', body('l0', 90_000));
    const order = () =>
      cluster.sim.requests
        .map((r) => {
          const m = (r.body as { messages?: Array<{ content?: unknown }> } | undefined)?.messages;
          return String(m?.at(-1)?.content).split(' ')[0]!;
        })
        .filter((n) => /^[ls]\d$/.test(n));
    await expect.poll(() => order().includes('l0'), { timeout: 20_000, interval: 50 }).toBe(true);
    const rest: Array<Promise<unknown>> = [];
    for (const [i, [key, name, pad]] of (
      [
        ['long', 'l1', 90_000],
        ['long', 'l2', 90_000],
        ['short', 's1', 0],
        ['short', 's2', 0],
        ['short', 's3', 0],
      ] as const
    ).entries()) {
      rest.push(freshRequest(cluster.origin, { key, body: body(name, pad) }));
      await expect.poll(queued, { timeout: 20_000, interval: 50 }).toBe(i + 1);
    }
    await l0.release();
    const answers = (await Promise.all(rest)) as Array<{ status: number }>;
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // By request count: l0 s1 l1 s2 l2 s3.
    expect(order(), order().join(' ')).toEqual(['l0', 's1', 's2', 's3', 'l1', 'l2']);
  }, 60_000);
});

describe('shares charge decode work, with two workers', () => {
  it("the primary charges the tokens a worker's request generated before its slot goes back", async () => {
    const queued = async () =>
      sample(await metrics(), 'toolproof_admission_queue_depth', 'upstream="http://localhost');
    const body = (name: string) =>
      JSON.stringify({ model: 'one', stream: true, messages: [{ role: 'user', content: name }] });
    // alice asks the long answer, bob the short ones (keys with no charge on this gate yet).
    // dh (bob's) holds the one slot until its client leaves.
    const dh = holdSlot('sk-bob-0123456789', body('dh'));
    const order = () =>
      cluster.sim.requests
        .map((r) => {
          const m = (r.body as { messages?: Array<{ content?: unknown }> } | undefined)?.messages;
          return String(m?.at(-1)?.content);
        })
        .filter((n) => /^d[hls]\d?$/.test(n));
    await expect.poll(() => order().includes('dh'), { timeout: 20_000, interval: 50 }).toBe(true);
    const rest: Array<Promise<unknown>> = [];
    for (const [i, [key, name]] of (
      [
        ['alice', 'dl0'],
        ['alice', 'dl1'],
        ['bob', 'ds1'],
        ['bob', 'ds2'],
        ['bob', 'ds3'],
      ] as const
    ).entries()) {
      rest.push(freshRequest(cluster.origin, { key, body: body(name) }));
      await expect.poll(queued, { timeout: 20_000, interval: 50 }).toBe(i + 1);
    }
    await dh.release();
    const answers = (await Promise.all(rest)) as Array<{ status: number }>;
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // By prompt alone: dh dl0 dl1 ds1 ds2 ds3 (dl1 and ds1 tied, dl1 older).
    expect(order(), order().join(' ')).toEqual(['dh', 'dl0', 'ds1', 'ds2', 'ds3', 'dl1']);
  }, 60_000);
});
