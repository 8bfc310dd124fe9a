/**
 * What crosses the cluster primary (TOOLPROOF_WORKERS=2), attacked. The inspector's reads across workers (TOOLPROOF_WORKERS=2: the real process, two workers in
 * front of the simulator) go through the cluster primary, which relays every worker's answer
 * under a budget (capture/cluster.ts, capture/relay-budget.ts). Until redteam12 that budget was
 * one for every reader: one key's script reading a large session in a loop kept it spent, and
 * every other key's inspector answered 429 for as long as the loop ran. Each key now has its own
 * share (its burst, an even share of the rate, one read at a time), the total still bounded.
 * The same cluster takes compressed bodies, decoded in whichever worker gets them. /metrics (open
 * without a key) was a gather of every worker's registry in the primary per scrape: N scrapes at
 * once, N gathers held and aggregated there; now scrapes share them.
 */
import { readFileSync } from 'node:fs';
import { brotliCompressSync, deflateRawSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest } from '../support/toolproof-process.js';

const cluster = clusterOnYaml(
  { personality: 'vllm' },
  (simUrl) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
keys:
  - { name: alice, key: sk-alice-0123456789 }
  - { name: bob, key: sk-bob-0123456789 }
`,
);

/** One request of `key` on a connection of its own (the primary spreads them over the workers). */
const send = (key: string, method: 'GET' | 'POST', path: string, body?: unknown) =>
  freshRequest(cluster.origin, {
    key,
    method,
    path,
    ...(body ? { headers: { 'x-session-id': 'shares' }, body: JSON.stringify(body) } : {}),
  });

/** The primary's CPU so far, ms (utime + stime of /proc/<pid>/stat, in 10 ms ticks). */
function primaryCpuMs(): number {
  const stat = readFileSync(`/proc/${cluster.proc.child.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** One GET /metrics on a connection of its own: its status. */
const scrape = async (): Promise<number> =>
  (await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' })).status;

describe('/metrics scrapes at once', () => {
  it("share the primary's gathers: 200 at once, far fewer gathers", async () => {
    // warm: the registries have their series
    expect(await scrape()).toBe(200);
    const c0 = primaryCpuMs();
    // each on a connection of its own, all at once
    const bodies = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const res = await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' });
        expect(res.status).toBe(200);
        return res.text;
      }),
    );
    const cpu = primaryCpuMs() - c0;
    // Each answer of a gather of its own differs from the others (the group's count of /metrics
    // requests answered, at least): 200 distinct answers, 200 gathers (at once: 200 registries
    // of each worker held in the primary), 510 ms of its CPU. Shared (the scrapes that ask while
    // a gather runs share the next one, two alive at most): 32-40 answers, 250-310 ms, most of
    // it accepting the 200 connections.
    const gathers = new Set(bodies).size;
    expect(gathers, `${gathers} gathers, ${cpu} ms of the primary's CPU`).toBeLessThanOrEqual(100);
  }, 60_000);
});

describe('compressed bodies with TOOLPROOF_WORKERS=2', () => {
  it('each worker decodes gzip, br and raw deflate, and cuts a bomb at the limit', async () => {
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const bomb = readFileSync(new URL('../fixtures/bombs/zeros-1gib.br', import.meta.url));
    const cases: Array<[string, Buffer, number]> = [
      ['gzip', gzipSync(chat), 200],
      ['br', brotliCompressSync(chat), 200],
      ['deflate', deflateRawSync(chat), 200],
      ['br', bomb, 413],
      ['gzip', gzipSync(chat), 200],
      ['deflate', deflateRawSync(chat), 200],
    ];
    // on connections of their own: the primary spreads them over both workers
    const got = await Promise.all(
      cases.map(async ([encoding, body]) => {
        const res = await freshRequest(cluster.origin, {
          key: 'bob',
          headers: { 'content-encoding': encoding },
          body,
        });
        return res.status;
      }),
    );
    expect(got).toEqual(cases.map((c) => c[2]));
  }, 60_000);
});

describe("the primary's relay budget, per reader", () => {
  it("one key's loop of session reads is refused its own reads, never another key's", async (ctx) => {
    // alice's session: 24 turns of ~120 KB, ~3M characters through the primary a read (a
    // reader's burst is 16M past a 4M/s rate).
    const big = 'z'.repeat(120_000);
    for (let i = 0; i < 24; i += 4)
      await Promise.all(
        [0, 1, 2, 3].map(async (k) => {
          const res = await send('alice', 'POST', '/v1/chat/completions', {
            model: 'm',
            messages: [{ role: 'user', content: `${big} ${i + k}` }],
          });
          expect(res.status).toBe(200);
        }),
      );
    expect(
      (
        await send('bob', 'POST', '/v1/chat/completions', {
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
        })
      ).status,
    ).toBe(200);
    // alice reads her session in a loop, without pause, until the test ends: past her first
    // 429 she stays about at her burst (each read she gets in adds ~3M). Her debt grows only
    // while the box relays her reads faster than the budget pays it back (4M a second): quiet,
    // ~5-15 s of reads; beside ten busy processes, one run took 112 s, against the test's 120.
    // A box that slow cannot put her over her share: past LOOP_MS without a refusal the test says
    // so and is skipped (it proves nothing either way there), not failed.
    const LOOP_MS = 60_000;
    const until = Date.now() + LOOP_MS;
    let refused: { status: number; text: string } | undefined;
    let stop = false;
    let firstRefusal!: () => void;
    const over = new Promise<void>((r) => {
      firstRefusal = r;
    });
    const loop = (async () => {
      for (let n = 0; n < 200 && !stop && (refused || Date.now() < until); n++) {
        const read = await send('alice', 'GET', '/inspect/api/session?key=h%3Ashares');
        if (read.status === 429 && !refused) {
          refused = read;
          firstRefusal();
        } else if (read.status === 429) await new Promise((r) => setTimeout(r, 50));
        else if (read.status !== 200) throw new Error(`alice: ${read.status} ${read.text}`);
      }
    })();
    try {
      await Promise.race([over, loop]);
      if (!refused && Date.now() >= until)
        ctx.skip(
          `alice's reads were relayed slower than the budget's rate for ${LOOP_MS / 1000} s: a box this loaded cannot spend her share`,
        );
      expect(refused, 'alice was never refused').toBeDefined();
      expect(JSON.parse(refused!.text).error.message).toMatch(/cluster primary's budget.*try again in \d+s/);
      // Meanwhile bob's reads pass, every one (with one budget for all they were refused as long
      // as alice's loop kept it spent).
      const bob: number[] = [];
      for (let k = 0; k < 6; k++) {
        const read = await send(
          'bob',
          'GET',
          k % 2 ? '/inspect/api/sessions' : '/inspect/api/requests?limit=50',
        );
        bob.push(read.status);
        // bob sees his own requests only (at most 7), never alice's 24
        if (k === 0 && read.status === 200) {
          const n = (JSON.parse(read.text) as { requests: unknown[] }).requests.length;
          expect(n).toBeGreaterThan(0);
          expect(n).toBeLessThanOrEqual(7);
        }
      }
      expect(bob).toEqual([200, 200, 200, 200, 200, 200]);
    } finally {
      stop = true;
      await loop;
    }
  }, 120_000);
});
