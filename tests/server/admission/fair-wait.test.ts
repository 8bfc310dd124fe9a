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
  opts: { key?: string; from?: string; name: string; holdMs?: number },
  done: string[],
) {
  const agent = new Agent({ localAddress: opts.from ?? '127.0.0.1' });
  agents.push(agent);
  return undiciFetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: agent,
    headers: {
      'content-type': 'application/json',
      'x-sim-scenario': JSON.stringify({ say: 'ok', delayMs: opts.holdMs ?? HOLD_MS }),
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
    },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: opts.name }] }),
  }).then(async (res) => {
    await res.text();
    done.push(`${opts.name} ${res.status}`);
  });
}

async function metric(origin: string, pattern: RegExp): Promise<number | undefined> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const m = pattern.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** How long the first two of a burst hold both slots: the rest and the other client line up. */
const LINE_UP_MS = 2_000;

/**
 * `a` sends a burst of `n`, then `b` one request; answers in the order they came. The burst's
 * first two hold both slots LINE_UP_MS, while its other `n - 2` and then b's reach the gate: each
 * step waits for the one before to be queued (on a loaded box a request takes a while to get
 * there, and a wall-clock pace let the slots free meanwhile, so the answers counted from b's
 * sending were not the ones that came after it queued). The slot that frees first then shows
 * the order: the first in line gets it, or the owner with fewer in flight.
 */
async function burstThenOne(
  s: Stack,
  a: { key?: string; from?: string },
  b: { key?: string; from?: string },
  n: number,
): Promise<string[]> {
  const done: string[] = [];
  const queued = () => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued;
  const held = [0, 1].map((i) => ask(s.origin, { ...a, name: `a${i}`, holdMs: LINE_UP_MS }, done));
  await waitFor(() => s.sim.requests.length === 2, 10_000);
  const rest = Array.from({ length: n - 2 }, (_, i) => ask(s.origin, { ...a, name: `a${i + 2}` }, done));
  await waitFor(() => queued() === n - 2, 10_000);
  const last = ask(s.origin, { ...b, name: 'b' }, done);
  await waitFor(() => queued() === n - 1, 10_000);
  // all in line while the first two still held the slots
  expect(done).toEqual([]);
  await Promise.all([...held, ...rest, last]);
  return done;
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
    const done = await burstThenOne(stack, { key: KEYS.alice }, { key: KEYS.bob }, 30);
    // alice's answers before bob's: the two that held the slots when he came and the one that
    // took the other slot as they freed. In arrival order it was every one of hers (30).
    const before = done.indexOf('b 200');
    expect(before, done.join(' ')).toBeGreaterThanOrEqual(0);
    expect(before, done.join(' ')).toBeLessThanOrEqual(3);
    expect(done.filter((d) => d.endsWith(' 200'))).toHaveLength(31);
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
    const done = await burstThenOne(stack, { from: '127.0.0.1' }, { from: '127.0.0.2' }, 12);
    const before = done.indexOf('b 200');
    expect(before, done.join(' ')).toBeGreaterThanOrEqual(0);
    expect(before, done.join(' ')).toBeLessThanOrEqual(3);
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
    // a1 holds the replica's one slot long enough for a2 and b to line up behind it on a loaded
    // box (at HOLD_MS, a1 could end before b reached the gate: a2 then took the free slot first).
    const a1 = ask(s.origin, { key: KEYS.alice, name: 'a1', holdMs: 1500 }, done);
    await waitFor(() => s.sim.requests.length === 1);
    const a2 = ask(s.origin, { key: KEYS.alice, name: 'a2' }, done);
    await waitFor(() => s.app.toolproof.keyLimits.waiting('alice') === 1);
    // a2 waits for alice's slot, not the replica's: the replica has a1 and nobody queued.
    expect(s.app.toolproof.upstreams.all()[0]!.admissionLoad()).toEqual([{ active: 1, queued: 0, limit: 1 }]);
    const b = ask(s.origin, { key: KEYS.bob, name: 'b' }, done);
    // b queued for the replica while a1 still holds it
    await waitFor(() => s.app.toolproof.upstreams.all()[0]!.admissionLoad()[0]!.queued === 1, 10_000);
    expect(done).toEqual([]);
    await Promise.all([a1, a2, b]);
    // a1's end frees both slots: the replica's goes to bob, queued for it; a2 then queues behind.
    expect(done).toEqual(['a1 200', 'b 200', 'a2 200']);
  }, 30_000);
});
