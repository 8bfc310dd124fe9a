/**
 * A bounded, reproducible soak of one toolproof process, loopback only; it stops by itself.
 *
 *   npx tsx bench/soak.ts [--requests=50000] [--streams=1000]
 *
 * 1. Concurrent streams with a tool declared (forced final_answer), all held open by the fake
 *    upstream at once, then released: how many were held and ended cleanly, RSS per open stream.
 * 2. `--requests` requests at c=64, mixed like agent traffic (tools non-streamed, tools
 *    streamed, plain chat): errors, and RSS sampled every tenth of the run (flat = no leak).
 * Prints one line per measure; exit 1 when a request failed or RSS kept growing.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { prepareServer } from './lib/build.js';
import { smallBody, streamBody, toolsBody, toolsStreamBody } from './lib/fixtures.js';
import { runLoad } from './lib/load.js';
import { freePort, memoryMb, startFakeUpstream, startNode, stopAll, waitForHttp } from './lib/procs.js';

const ROOT = join(import.meta.dirname, '..');
const arg = (name: string, fallback: number): number => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.split('=')[1]) : fallback;
};
const REQUESTS = arg('requests', 50_000);
const STREAMS = arg('streams', 1000);
const log = (line: string) => process.stdout.write(`${line}\n`);

async function heldStreams(origin: string, upstream: string, n: number) {
  const pool = new Pool(origin, { connections: n + 8, pipelining: 1, keepAliveTimeout: 60_000 });
  const body = toolsStreamBody({ mode: 'hold' });
  let opened = 0;
  let clean = 0;
  const all = Array.from({ length: n }, async () => {
    const res = await pool.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    opened++;
    const text = await res.body.text();
    if (res.statusCode === 200 && text.trimEnd().endsWith('data: [DONE]') && !text.includes('"error"'))
      clean++;
  });
  const deadline = Date.now() + 30_000;
  while (opened < n && Date.now() < deadline) await sleep(100);
  await sleep(500);
  const open = opened;
  return {
    open,
    release: async () => {
      await request(`${upstream}/bench/release`);
      await Promise.allSettled(all);
      await pool.close();
      return clean;
    },
  };
}

async function main(): Promise<number> {
  const { origin: upstreamOrigin } = await startFakeUpstream(ROOT);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOOLPROOF_')) env[k] = v;
  const tp = startNode({
    name: 'toolproof',
    args: prepareServer(ROOT, 'build', log),
    env: {
      ...env,
      TOOLPROOF_UPSTREAM_URL: `${upstreamOrigin}/v1`,
      TOOLPROOF_HOST: '127.0.0.1',
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_LOG_LEVEL: 'warn',
    },
    cwd: ROOT,
  });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(tp, `${origin}/health`, 60_000);
  let failed = false;

  // 1. Many streams open at once.
  const before = memoryMb(tp.pid).rss;
  const held = await heldStreams(origin, upstreamOrigin, STREAMS);
  const during = memoryMb(tp.pid).rss;
  const clean = await held.release();
  log(
    `streams: ${held.open}/${STREAMS} held open at once, ${clean} ended cleanly; RSS ${before.toFixed(1)} -> ` +
      `${during.toFixed(1)} MB, ${(((during - before) * 1024) / Math.max(held.open, 1)).toFixed(1)} KB per open stream`,
  );
  if (clean !== STREAMS) failed = true;

  // 2. Many requests: RSS must level off.
  const pool = new Pool(origin, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });
  const mix = [
    { body: toolsBody(), stream: false },
    { body: toolsStreamBody(), stream: true },
    { body: smallBody(), stream: false },
    { body: streamBody(), stream: true },
  ];
  const tenth = Math.ceil(REQUESTS / 10);
  const samples: number[] = [];
  let errors = 0;
  const started = performance.now();
  for (let round = 0; round < 10; round++) {
    for (const m of mix) {
      const r = await runLoad({
        pool,
        body: m.body,
        stream: m.stream,
        concurrency: 64,
        requests: tenth / mix.length,
      });
      errors += r.errors;
    }
    samples.push(memoryMb(tp.pid).rss);
  }
  await pool.close();
  const seconds = (performance.now() - started) / 1000;
  log(
    `requests: ${REQUESTS} in ${seconds.toFixed(1)} s (${Math.round(REQUESTS / seconds)}/s), ${errors} errors; ` +
      `RSS every ${tenth}: ${samples.map((s) => s.toFixed(0)).join(' ')} MB`,
  );
  // Growth over the second half of the run (the first fills pools, caches and the JIT).
  const half = samples.slice(5);
  const growth = (half.at(-1) ?? 0) - (half[0] ?? 0);
  log(`RSS growth over the last half: ${growth.toFixed(1)} MB`);
  if (errors > 0 || growth > 40) failed = true;
  await stopAll();
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    await stopAll();
    process.exit(1);
  },
);
