/**
 * The inspector's session queries through the cluster primary (redteam11): toolproof with
 * TOOLPROOF_WORKERS=2 in a child (tsx), its rings filled with one long agent session (turns of
 * ~120 KB prompts, x-session-id: flood), then C clients asking /inspect/api/session for it in a
 * loop for T seconds while a prober sends a short chat request on a fresh connection every 100
 * ms (a fresh connection is accepted by the primary). Printed per phase (the prober alone, then
 * with the flood): the prober's latencies, the primary's event-loop delay (a preload that samples
 * only in the primary) and its CPU time (/proc), and the session answers served.
 *
 *   [BENCH_ROOT=/tmp/before] npx tsx bench/inspect-flood.ts [clients=4] [seconds=10] [flood path]
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'undici';
import { createSimulator } from '../simulator/index.js';
import { freePort } from '../tests/support/toolproof-process.js';

// BENCH_ROOT: another tree's server (an earlier commit's, exported with node_modules linked).
const ROOT = process.env.BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const CLIENTS = Number(process.argv[2] ?? 4);
const SECONDS = Number(process.argv[3] ?? 10);
// What the flooding clients ask for (another path: the cost of their fresh connections alone).
const FLOOD_PATH = process.argv[4] ?? '/inspect/api/session?key=h%3Aflood';

const preload = join(tmpdir(), `tp-primary-loop-${process.pid}.mjs`);
const samplesFile = join(tmpdir(), `tp-primary-loop-${process.pid}.json`);
writeFileSync(
  preload,
  `import cluster from 'node:cluster';
import { writeFileSync } from 'node:fs';
if (cluster.isPrimary && process.env.TP_LOOP_OUT) {
  const s = []; let last = performance.now();
  setInterval(() => { const now = performance.now(); s.push(Date.now(), Math.max(0, now - last - 10)); last = now; }, 10).unref();
  process.once('exit', () => writeFileSync(process.env.TP_LOOP_OUT, JSON.stringify(s)));
}
`,
);

const cpuMs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

async function request(origin: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const client = new Client(origin);
  try {
    const res = await client.request({
      method: body === undefined ? 'GET' : 'POST',
      path,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    return {
      status: res.statusCode,
      bytes: text.length,
      turns: /"turns":\[/.test(text) ? text.split('"summary"').length - 1 : 0,
    };
  } finally {
    await client.close();
  }
}

const sim = await createSimulator({ personality: 'vllm' });
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const child = spawn(
  process.execPath,
  ['--import', preload, '--import', 'tsx', join(ROOT, 'server/main.ts')],
  {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      TOOLPROOF_WORKERS: '2',
      TOOLPROOF_HOST: '127.0.0.1',
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_UPSTREAM_URL: sim.url,
      TOOLPROOF_SHUTDOWN_GRACE_MS: '1000',
      TOOLPROOF_LOG_LEVEL: 'warn',
      TP_LOOP_OUT: samplesFile,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
await new Promise<void>((resolve) => {
  const t = setInterval(() => {
    request(origin, '/healthz').then(
      () => {
        clearInterval(t);
        resolve();
      },
      () => {},
    );
  }, 300);
});

// Fill: 100 turns of one session, each a ~120 KB prompt (both rings hold ~40 of them).
const big = Array.from({ length: 120 }, (_, i) => `line ${i} ${'x'.repeat(1000)}`).join('\n');
for (let i = 0; i < 100; i += 4)
  await Promise.all(
    [0, 1, 2, 3].map((k) =>
      request(
        origin,
        '/v1/chat/completions',
        {
          model: 'm',
          messages: [
            { role: 'system', content: 'You are an agent.' },
            { role: 'user', content: `${big}\nturn ${i + k}` },
          ],
        },
        { 'x-session-id': 'flood' },
      ),
    ),
  );

async function phase(name: string, flood: boolean) {
  const lat: number[] = [];
  let answers = 0;
  let answerBytes = 0;
  let turns = 0;
  const statuses = new Map<number, number>();
  const end = Date.now() + SECONDS * 1000;
  const cpu0 = cpuMs(child.pid!);
  const t0 = Date.now();
  const prober = (async () => {
    while (Date.now() < end) {
      const s = performance.now();
      const r = await request(origin, '/v1/chat/completions', {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      });
      if (r.status === 200) lat.push(performance.now() - s);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const flooders = flood
    ? Array.from({ length: CLIENTS }, async () => {
        while (Date.now() < end) {
          const r = await request(origin, FLOOD_PATH);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 200) {
            answers++;
            answerBytes += r.bytes;
            turns = r.turns;
          }
        }
      })
    : [];
  await Promise.all([prober, ...flooders]);
  return {
    name,
    t0,
    t1: Date.now(),
    cpu: cpuMs(child.pid!) - cpu0,
    lat,
    answers,
    answerBytes,
    turns,
    statuses,
  };
}

const results = [
  await phase('prober alone', false),
  await phase(`prober + ${CLIENTS} session readers`, true),
];
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
await exited;
await sim.close();
const samples = JSON.parse(readFileSync(samplesFile, 'utf8')) as number[];
for (const r of results) {
  const delays: number[] = [];
  for (let i = 0; i < samples.length; i += 2)
    if (samples[i]! >= r.t0 && samples[i]! <= r.t1) delays.push(samples[i + 1]!);
  console.log(
    `${r.name}: chat ms p50 ${q(r.lat, 0.5).toFixed(0)} p95 ${q(r.lat, 0.95).toFixed(0)} max ${Math.max(...r.lat).toFixed(0)} (n ${r.lat.length}); ` +
      `primary loop delay ms p50 ${q(delays, 0.5).toFixed(1)} p99 ${q(delays, 0.99).toFixed(0)} max ${Math.max(...delays).toFixed(0)}; ` +
      `primary CPU ${r.cpu} ms over ${((r.t1 - r.t0) / 1000).toFixed(1)} s; session answers ${r.answers} of ${r.turns} turns (${(r.answerBytes / 1e6).toFixed(1)} MB) statuses ${JSON.stringify([...r.statuses])}` +
      (r.answers ? `; primary CPU per answer ${(r.cpu / r.answers).toFixed(1)} ms` : ''),
  );
}
