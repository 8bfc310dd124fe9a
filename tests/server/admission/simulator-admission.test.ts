/**
 * Admission on the built-in simulator, as a user tries docs/operations.md with `npm start` and no
 * backend: main.ts made the simulator the default upstream without the YAML's `admission`, so
 * every request went straight through (queuedMs 0, no 429, no admission metric) whatever the
 * YAML said. The real process, a YAML with only `admission:` and then a reload that changes it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, type Proc, startToolproof } from '../../support/toolproof-process.js';

const dir = mkdtempSync(join(tmpdir(), 'tp-sim-admission-'));
const file = join(dir, 'toolproof.yaml');
const yaml = (queueSize: number) =>
  `admission:\n  concurrency: 1\n  queueSize: ${queueSize}\n  queueTimeoutMs: 20000\n`;
let proc: Proc;
let origin: string;

beforeAll(async () => {
  writeFileSync(file, yaml(2));
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  proc = startToolproof({
    TOOLPROOF_CONFIG: file,
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'info',
  });
  await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening'), 60_000);
}, 90_000);

afterAll(async () => {
  proc.child.kill('SIGTERM');
  await proc.exited;
});

/** Three requests at once, each holding the one slot ~600 ms: what each got. */
async function threeAtOnce(): Promise<string[]> {
  const client = new OpenAI({
    baseURL: `${origin}/v1`,
    apiKey: 'x',
    maxRetries: 0,
    defaultHeaders: { 'x-sim-scenario': JSON.stringify({ say: 'slow answer', delayMs: 600 }) },
  });
  return Promise.all(
    [0, 1, 2].map(async () => {
      try {
        await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'hi' }] });
        return 'ok';
      } catch (err) {
        const e = err as { status?: number; code?: string; headers?: Headers };
        return `${e.status} ${e.code} retry-after ${e.headers?.get('retry-after') ? 'set' : 'missing'}`;
      }
    }),
  );
}

it('the YAML admission holds on the simulator: one request in the slot, the others wait their turn', async () => {
  expect(await threeAtOnce()).toEqual(['ok', 'ok', 'ok']);
  // The log lines reach this process a moment after the answers.
  const requestLines = () => proc.lines.filter((l) => l.msg === 'request').length;
  for (let i = 0; i < 50 && requestLines() < 3; i++) await new Promise((r) => setTimeout(r, 100));
  const queued = proc.lines
    .filter((l) => l.msg === 'request')
    .map((l) => (l.harness as { queuedMs?: number }).queuedMs ?? 0);
  expect(queued.filter((ms) => ms > 300)).toHaveLength(2);
}, 30_000);

it('a reload changes it: with a queue of 1, the third is refused with Retry-After', async () => {
  writeFileSync(file, yaml(1));
  proc.child.kill('SIGHUP');
  await proc.waitFor((l) => l.msg === 'configuration reloaded', 10_000);
  const got = await threeAtOnce();
  expect(got.sort()).toEqual(['429 TP_ERR_QUEUE_FULL retry-after set', 'ok', 'ok']);
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  expect(metrics).toMatch(/toolproof_admission_shed_total\{[^}]*\} 1/);
}, 30_000);
