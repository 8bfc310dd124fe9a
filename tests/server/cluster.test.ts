/**
 * TOOLPROOF_WORKERS: the real process (server/main.ts in a child) with two workers on one
 * fixed port in front of the built-in simulator; fresh connections are spread over the workers by the
 * primary, /metrics shows the group whichever worker answers, a killed worker is replaced, and
 * SIGTERM closes everything.
 */
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workerCount } from '../../server/cluster.js';
import { ConfigError } from '../../server/config.js';
import { freePort, once, type Proc, startToolproof } from '../support/toolproof-process.js';

const SLOW_ANSWER = 'one two three four five six seven eight nine ten';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Chat requests answered 200, under the model's label or "other" (a worker's first request of a name it has not seen served). */
const chatCount = (metrics: string) =>
  [
    ...metrics.matchAll(
      /toolproof_requests_total\{model="(?:m1|other)",route="chat\/completions",status="200",api="chat"\} (\d+)/g,
    ),
  ].reduce((sum, m) => sum + Number(m[1]), 0);

describe('TOOLPROOF_WORKERS', () => {
  it('is 1 when unset, one per core for auto, a number, and a precise error otherwise', () => {
    expect(workerCount({})).toBe(1);
    expect(workerCount({ TOOLPROOF_WORKERS: '' })).toBe(1);
    expect(workerCount({ TOOLPROOF_WORKERS: '3' })).toBe(3);
    expect(workerCount({ TOOLPROOF_WORKERS: 'auto' })).toBeGreaterThanOrEqual(1);
    for (const bad of ['0', '-1', 'two', '1.5', '99999'])
      expect(() => workerCount({ TOOLPROOF_WORKERS: bad })).toThrow(ConfigError);
    expect(() => workerCount({ TOOLPROOF_WORKERS: 'two' })).toThrow(/TOOLPROOF_WORKERS must be "auto"/);
  });

  it('a bad value stops the process at start with exit code 2', async () => {
    const p = startToolproof({ TOOLPROOF_WORKERS: 'many', TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });
    expect(await p.exited).toBe(2);
    expect(p.text()).toContain('TOOLPROOF_WORKERS must be');
  });
});

/**
 * On the built-in simulator (no upstream configured): each worker starts a simulator of its own,
 * whose listen is not toolproof's. One group serves every test below: until testspeed15 the
 * start-up line had a group of its own, a second primary and two workers (~4 s of CPU).
 */
describe('two workers on one port', () => {
  let proc: Proc;
  let origin: string;
  let port: number;
  let workerPids: number[];

  beforeAll(async () => {
    port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    proc = startToolproof({
      TOOLPROOF_WORKERS: '2',
      TOOLPROOF_HOST: '127.0.0.1',
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_LOG_LEVEL: 'debug',
      // Room for the ~1.2 s stream on a box at load 18 (2 s ran out there: the stream then ends,
      // as designed, with the deadline's error event instead of its answer).
      TOOLPROOF_SHUTDOWN_GRACE_MS: '8000',
    });
    await proc.waitFor((l) => /^2 workers listening on /.test(String(l.msg)), 60_000);
    workerPids = proc.lines
      .filter((l) => typeof l.msg === 'string' && /^worker \d+ \(pid \d+\) listening$/.test(l.msg))
      .map((l) => Number(/pid (\d+)/.exec(String(l.msg))![1]));
  }, 90_000);

  afterAll(async () => {
    if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
    for (const pid of workerPids ?? []) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  it("on the built-in simulator: the start-up line names toolproof's port, once each worker serves it", async () => {
    // Each worker's simulator listens on a port of its own first; those listens are not toolproof's.
    const line = proc.lines.find((l) => /^2 workers listening on /.test(String(l.msg)));
    expect(line?.msg).toBe(`2 workers listening on 127.0.0.1:${port}`);
    expect(workerPids).toHaveLength(2);
    const res = await fetch(`${origin}/v1/models`);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  it("each worker compiles the front doors' body validators before it listens (its first requests reach the key queue in order)", () => {
    // Compiled at a route's first request, the chat body's schema took a cold worker's first
    // request 0.1-0.3 s before it reached the group's key queue: a later request to a warm
    // worker took the key's slot first (report of journeys22; bench figures there).
    for (const pid of workerPids) {
      const line = proc.lines.find(
        (l) => l.pid === pid && l.msg === 'request body validators compiled before listening',
      );
      // chat completions, Responses (and its compact), Messages (and count_tokens), completions, embeddings
      expect(Number(line?.validators)).toBeGreaterThanOrEqual(7);
    }
  });

  /** pid of the process that logged the request with this id. */
  const servedBy = async (reqId: string) =>
    Number((await proc.waitFor((l) => l.reqId === reqId && l.msg === 'request', 10_000)).pid);

  /** pids of the processes that answered `n` chat requests (each 200), each on a connection of its own. */
  const chatServedBy = async (n: number) => {
    const pids = new Set<number>();
    for (let i = 0; i < n; i++) {
      const r = await once(origin, '/v1/chat/completions', {
        model: 'm1',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(r.status).toBe(200);
      pids.add(await servedBy(r.reqId));
    }
    return pids;
  };

  it('both workers serve, and /metrics from either shows the whole group', async () => {
    expect(workerPids).toHaveLength(2);
    expect(workerPids).not.toContain(proc.child.pid);
    const pids = await chatServedBy(6);
    expect([...pids].sort()).toEqual([...workerPids].sort());

    const answeredBy = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const m = await once(origin, '/metrics');
      expect(m.status).toBe(200);
      expect(chatCount(m.text)).toBe(6);
      answeredBy.add(await servedBy(m.reqId));
    }
    expect(answeredBy.size).toBe(2);
  }, 60_000);

  it('a worker that dies is replaced; SIGTERM stops the primary and every worker', async () => {
    const victim = workerPids[0]!;
    process.kill(victim, 'SIGKILL');
    await proc.waitFor((l) =>
      String(l.msg).includes(`(pid ${victim}) exited with signal SIGKILL; starting a new one`),
    );
    const replacement = await proc.waitFor(
      (l) =>
        /^worker \d+ \(pid \d+\) listening$/.test(String(l.msg)) &&
        !workerPids.includes(Number(/pid (\d+)/.exec(String(l.msg))![1])),
    );
    const newPid = Number(/pid (\d+)/.exec(String(replacement.msg))![1]);
    workerPids.push(newPid);
    const pids = await chatServedBy(4);
    expect(pids.has(newPid)).toBe(true);
    expect(pids.has(victim)).toBe(false);

    // A stream open when SIGTERM arrives still finishes (the workers' shutdown grace), then
    // the primary exits 0 once every worker has closed.
    const client = new Client(origin);
    const res = await client.request({
      method: 'POST',
      path: '/v1/chat/completions',
      // Slow (10 pieces, 120 ms apart) so it is still open when SIGTERM arrives: the worker's
      // simulator plays the scenario the request names.
      headers: {
        'content-type': 'application/json',
        'x-sim-scenario': JSON.stringify({ say: SLOW_ANSWER, chunkDelayMs: 120 }),
      },
      body: JSON.stringify({ model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const chunks: string[] = [];
    const body = (async () => {
      for await (const chunk of res.body) chunks.push(chunk.toString());
    })();
    while (chunks.length === 0) await new Promise((r) => setTimeout(r, 20));
    proc.child.kill('SIGTERM');
    await body;
    await client.close();
    const text = chunks.join('');
    expect(text).toContain('data: [DONE]');
    const content = text
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map(
        (b) =>
          (JSON.parse(b.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta
            .content ?? '',
      )
      .join('');
    expect(content).toBe(SLOW_ANSWER);
    expect(await proc.exited).toBe(0);
    for (const pid of workerPids) expect(alive(pid)).toBe(false);
  }, 60_000);
});
