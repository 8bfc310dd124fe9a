/**
 * The inspector with TOOLPROOF_WORKERS=2 (the real process, server/main.ts in a child):
 * each worker has its own capture ring, and whichever worker answers /inspect/api, it shows every
 * worker's requests (the query goes to every worker through the primary, capture/cluster.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { freshRequest, once, type Proc, startWorkers, stopWorkers } from '../support/toolproof-process.js';

/** /inspect/api/session's answer, or the inspector's error. */
interface SessionAnswer {
  partial: boolean;
  workers: number;
  turns: Array<{ prefix: { kept: boolean } | null }>;
  error: { type: string; message: string };
}

describe('the inspector over two workers', () => {
  let sim: Simulator;
  let proc: Proc;
  let origin: string;

  beforeAll(async () => {
    sim = await createSimulator({ personality: 'vllm' });
    ({ proc, origin } = await startWorkers(undefined, 2, {
      TOOLPROOF_UPSTREAM_URL: sim.url,
      TOOLPROOF_SHUTDOWN_GRACE_MS: '1000',
    }));
  }, 90_000);

  afterAll(async () => {
    await stopWorkers(proc);
    await sim?.close();
  });

  it("every worker's requests, whichever worker answers", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await once(origin, '/v1/chat/completions', {
        model: 'm',
        messages: [{ role: 'user', content: `question ${i}` }],
      });
      expect(res.status).toBe(200);
      ids.push(res.reqId);
    }
    for (let i = 0; i < 4; i++) {
      const res = await once(origin, '/inspect/api/requests');
      const body = JSON.parse(res.text) as {
        workers: number;
        partial: boolean;
        requests: Array<{ id: string; worker: number }>;
      };
      expect(body.workers).toBe(2);
      expect(body.partial).toBe(false);
      expect(body.requests.map((r) => r.id).sort()).toEqual([...ids].sort());
      // Served by both workers (the primary hands connections out in turn).
      expect(new Set(body.requests.map((r) => r.worker)).size).toBe(2);
    }
    for (const id of ids) expect((await once(origin, `/inspect/api/requests/${id}`)).status).toBe(200);
  }, 60_000);

  it('two runs that open alike, their turns spread over both workers: two sessions, whichever worker answers', async () => {
    const opening = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'Weather in Oslo?' },
    ];
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const runs = [
      { history: [...opening] as unknown[], ids: [] as string[] },
      { history: [...opening] as unknown[], ids: [] as string[] },
    ];
    const workers = new Set<number>();
    for (let i = 0; i < 3; i++)
      for (const run of runs) {
        // A connection of its own per turn: the primary hands them to the workers in turn.
        const res = await freshRequest(origin, {
          body: JSON.stringify({ model: 'm', messages: run.history, tools }),
        });
        expect(res.status).toBe(200);
        run.ids.push(String(res.headers['x-request-id']));
        const msg = (
          JSON.parse(res.text) as { choices: Array<{ message: { tool_calls?: Array<{ id: string }> } }> }
        ).choices[0]!.message;
        run.history.push(
          msg,
          msg.tool_calls?.length
            ? { role: 'tool', tool_call_id: msg.tool_calls[0]!.id, content: 'rain' }
            : { role: 'user', content: 'And tomorrow?' },
        );
      }
    for (let i = 0; i < 2; i++) {
      const { requests } = JSON.parse((await once(origin, '/inspect/api/requests')).text) as {
        requests: Array<{ id: string; session: string; worker: number }>;
      };
      const labels = runs.map((run) => {
        const own = requests.filter((q) => run.ids.includes(q.id));
        for (const q of own) workers.add(q.worker);
        expect(new Set(own.map((q) => q.session)).size).toBe(1);
        return own[0]!.session;
      });
      expect(labels[0]).not.toBe(labels[1]);
      for (const [k, run] of runs.entries()) {
        const view = JSON.parse(
          (await once(origin, `/inspect/api/session?key=${encodeURIComponent(labels[k]!)}`)).text,
        ) as { turns: Array<{ summary: { id: string } }> };
        expect(view.turns.map((t) => t.summary.id)).toEqual(run.ids);
        // Its export: every worker's requests of it, whole, in order (docs/inspect.md, a bug report).
        const file = JSON.parse(
          (await once(origin, `/inspect/api/session/export?key=${encodeURIComponent(labels[k]!)}`)).text,
        ) as { workers: number; requests: Array<{ record: { id: string; worker: number } }> };
        expect(file.workers).toBe(2);
        expect(file.requests.map((r) => r.record.id)).toEqual(run.ids);
      }
    }
    expect(workers.size).toBe(2);
  }, 60_000);

  it.skipIf(!chromiumAvailable)(
    "the page's list opens without a 429: its questions go one at a time (the primary relays one a reader)",
    async () => {
      await once(origin, '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      // A context of its own in the worker's shared browser: closing that browser here made the
      // next page file in this worker launch Chromium again (~1.3 s of CPU).
      const { page, close } = await openPage();
      try {
        const statuses: number[] = [];
        page.on('response', (r) => {
          if (r.url().includes('/inspect/api/')) statuses.push(r.status());
        });
        for (let i = 0; i < 3; i++) {
          await page.goto('about:blank');
          await page.goto(`${origin}/inspect`);
          await page.locator('tr[data-id]').first().waitFor({ timeout: 5_000 });
          await page
            .locator('#session-choices option')
            .first()
            .waitFor({ state: 'attached', timeout: 5_000 });
        }
        expect(statuses.filter((s) => s === 429)).toEqual([]);
        expect(await page.locator('#state').textContent()).toMatch(/ requests · 2 workers$/);
      } finally {
        await close();
      }
    },
  );

  it("session reads past the primary's relay budget are refused with a 429 in the API's shape, the rest answered whole", async () => {
    // 24 turns of one session, each a ~120 KB prompt: a session answer is ~3M characters through
    // the primary, 8 of them 23M; the primary relays at most 2 questions at a time and 16M
    // characters past its rate (capture/cluster.ts).
    const big = 'z'.repeat(120_000);
    for (let i = 0; i < 24; i += 4)
      await Promise.all(
        [0, 1, 2, 3].map(async (k) => {
          const res = await freshRequest(origin, {
            headers: { 'x-session-id': 'relay-budget' },
            body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `${big} ${i + k}` }] }),
          });
          expect(res.status).toBe(200);
        }),
      );
    const reads = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const res = await freshRequest(origin, {
          method: 'GET',
          path: '/inspect/api/session?key=h%3Arelay-budget',
        });
        return {
          status: res.status,
          retryAfter: res.headers['retry-after'],
          body: JSON.parse(res.text) as SessionAnswer,
        };
      }),
    );
    const refused = reads.filter((r) => r.status === 429);
    const answered = reads.filter((r) => r.status === 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(answered.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body.error.type).toBe('rate_limit_error');
      expect(r.body.error.message).toMatch(/cluster primary's budget.*try again in \d+s/);
    }
    for (const r of answered) {
      // A worker's answer past the 3 s (a loaded box) leaves this worker's alone, marked.
      expect(r.body.workers).toBe(r.body.partial ? 1 : 2);
      if (r.body.partial) continue;
      expect(r.body.turns).toHaveLength(24);
      // Each turn's prompt rewrites the one message at its end: the break is found across workers.
      for (const t of r.body.turns.slice(1)) expect(t.prefix?.kept).toBe(false);
    }
  }, 90_000);
});
