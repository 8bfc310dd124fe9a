/**
 * A session's export with TOOLPROOF_WORKERS=2 (the real process): each worker's part of it held
 * up to 16 MiB of JSON, so an export of a session that filled both rings relayed 28 MB through
 * the primary (which parses and writes each byte again), past one reader's 16 MiB burst, let
 * through whole. Now each part is half the bound: the whole within one reader's burst, and the
 * reader's next read passes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { freshRequest, once, type Proc, startWorkers, stopWorkers } from '../support/toolproof-process.js';

/** server/capture/query.ts EXPORT_CHARS. */
const EXPORT_CHARS = 16 * 1024 * 1024;

describe('a session export over two full rings', () => {
  let sim: Simulator;
  let proc: Proc;
  let origin: string;

  beforeAll(async () => {
    sim = await createSimulator({ personality: 'vllm' });
    ({ proc, origin } = await startWorkers(undefined, 2, {
      TOOLPROOF_UPSTREAM_URL: sim.url,
      TOOLPROOF_CAPTURE_MB: '12',
      TOOLPROOF_SHUTDOWN_GRACE_MS: '1000',
    }));
  }, 90_000);

  afterAll(async () => {
    await stopWorkers(proc);
    await sim?.close();
  });

  it('is at most 16 MiB in all, says what it left out, and the next read passes', async () => {
    const text = "'".repeat(200_000);
    for (let i = 0; i < 80; i++) {
      // A connection of its own each: the primary hands them to the workers in turn.
      const res = await freshRequest(origin, {
        headers: { 'x-claude-code-session-id': 'big' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `turn ${i} ${text}` }] }),
      });
      expect(res.status).toBe(200);
    }
    const { sessions } = JSON.parse((await once(origin, '/inspect/api/sessions')).text) as {
      sessions: Array<{ session: string; requests: number }>;
    };
    const held = sessions[0]!;
    const key = encodeURIComponent(held.session);
    const exported = await once(origin, `/inspect/api/session/export?key=${key}`);
    expect(exported.status).toBe(200);
    expect(exported.text.length).toBeLessThan(EXPORT_CHARS + 1024 * 1024);
    const file = JSON.parse(exported.text) as {
      workers: number;
      session: { omitted?: number };
      requests: unknown[];
    };
    expect(file.workers).toBe(2);
    expect(file.requests.length + (file.session.omitted ?? 0)).toBe(held.requests);
    expect(file.session.omitted).toBeGreaterThan(0);
    expect((await once(origin, `/inspect/api/session?key=${key}`)).status).toBe(200);
  }, 120_000);
});
