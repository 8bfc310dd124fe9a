/**
 * What each open stream keeps on toolproof's heap, by constructor, with and without a tool:
 *
 *   npm run bench:heap [-- --streams=1000 --after=N --server=build|tsx --top=25 --keep --node-flags="..."]
 *
 * For each of "no tools" and "one tool" (the bodies of the open-stream probe, bench/lib/open-streams.ts)
 * on a freshly started toolproof in front of the bench's fake upstream:
 * 1. warm the path with 100 held streams (unmeasured), then the RSS probe: RSS before, N held
 *    streams open, RSS, release;
 * 2. a heap snapshot (--heapsnapshot-signal; taking one runs a full GC), N held streams open again,
 *    a second snapshot while they are open, release.
 * Node ids are stable between snapshots of one process, so the objects of the second snapshot the
 * first lacks are what the open streams keep (plus a little noise). Printed per stream: grouped by
 * constructor (DevTools' summary buckets), and by first strong retainer (`what <- holder.edge`),
 * which names the field or closure that keeps it. RSS per stream minus heap per stream is native
 * memory: socket buffers, the HTTP parsers' native halves, malloc slack.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { prepareServer, type ServerMode } from './lib/build.js';
import { streamBody, toolsStreamBody } from './lib/fixtures.js';
import { diffSnapshots, readSnapshot } from './lib/heap-snapshot.js';
import { heldStreams, type ProbeTarget } from './lib/open-streams.js';
import {
  type Child,
  freePort,
  startFakeUpstream,
  startNode,
  stopAll,
  stopChild,
  waitForHttp,
} from './lib/procs.js';

const ROOT = resolve(import.meta.dirname, '..');

interface Options {
  streams: number;
  server: ServerMode;
  top: number;
  keep: boolean;
  nodeFlags: string[];
  /** Events each stream gets before it is held (default: the fake upstream's first few). */
  after: number | undefined;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    streams: 1000,
    server: 'build',
    top: 25,
    keep: false,
    nodeFlags: [],
    after: undefined,
  };
  for (const arg of argv) {
    const eq = arg.indexOf('=');
    const key = eq === -1 ? arg : arg.slice(0, eq);
    const value = eq === -1 ? '' : arg.slice(eq + 1);
    if (key === '--streams' && Number(value) > 0) o.streams = Number(value);
    else if (key === '--top' && Number(value) > 0) o.top = Number(value);
    else if (key === '--server' && (value === 'build' || value === 'tsx' || value === 'dist'))
      o.server = value;
    else if (key === '--keep') o.keep = true;
    else if (key === '--after' && Number(value) >= 1) o.after = Number(value);
    else if (key === '--node-flags') o.nodeFlags = value.split(/\s+/).filter(Boolean);
    else
      throw new Error(
        `unknown argument ${arg}: --streams=N --after=N --server=build|dist|tsx --top=N --keep --node-flags="..."`,
      );
  }
  return o;
}

/** Sends SIGUSR2 and waits until the snapshot is written (writing blocks its event loop). */
async function snapshot(child: Child, dir: string, origin: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  child.proc.kill('SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    const fresh = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (fresh) {
      // Written on the main thread: once /health answers, the file is complete.
      const res = await request(`${origin}/health`, { headersTimeout: 120_000, bodyTimeout: 120_000 });
      await res.body.dump();
      return join(dir, fresh);
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot within 120 s:\n${child.output()}`);
    await sleep(50);
  }
}

async function launch(serverArgs: string[], upstreamOrigin: string, dir: string, nodeFlags: string[]) {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOOLPROOF_')) env[k] = v;
  Object.assign(env, {
    TOOLPROOF_UPSTREAM_URL: `${upstreamOrigin}/v1`,
    TOOLPROOF_HOST: '127.0.0.1',
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'warn',
    TOOLPROOF_SHUTDOWN_GRACE_MS: '2000',
  });
  // cwd = the snapshot folder: --heapsnapshot-signal writes into the working directory.
  const child = startNode({
    name: 'toolproof',
    args: ['--heapsnapshot-signal=SIGUSR2', ...nodeFlags, ...serverArgs],
    env,
    cwd: dir,
  });
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(child, `${origin}/health`, 60_000);
  const target: ProbeTarget = { name: 'toolproof', origin, pids: [child.pid] };
  return { child, target };
}

const kb = (bytes: number) => (bytes / 1024).toFixed(2);

/** V8's heap from toolproof's /metrics (prom-client's default metrics read v8 at each scrape). */
async function v8Heap(origin: string): Promise<{ total: number; used: number; external: number }> {
  const res = await request(`${origin}/metrics`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    total: value('nodejs_heap_size_total_bytes'),
    used: value('nodejs_heap_size_used_bytes'),
    external: value('nodejs_external_memory_bytes'),
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const serverArgs = prepareServer(ROOT, opts.server, log).map((a) =>
    a.endsWith('.js') ? resolve(ROOT, a) : a,
  );
  const { origin: upstreamOrigin } = await startFakeUpstream(ROOT);
  const base = join(ROOT, 'bench/results');
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(opts.keep ? base : tmpdir(), 'heap-'));
  const n = opts.streams;
  const summary: string[] = [];
  try {
    for (const tools of [false, true]) {
      const label = tools ? 'one tool (forced final_answer)' : 'no tools';
      // --after=N: each stream has produced N events (a long output) when it is held.
      const shape = opts.after === undefined ? {} : { chunks: opts.after + 20, holdAfter: opts.after };
      const body = tools
        ? toolsStreamBody({ mode: 'hold', ...shape })
        : streamBody({ mode: 'hold', ...shape });
      const { child, target } = await launch(serverArgs, upstreamOrigin, dir, opts.nodeFlags);
      try {
        await heldStreams(target, upstreamOrigin, body, 100);
        await sleep(300);
        const v8Before = await v8Heap(target.origin);
        let v8Open = v8Before;
        const rss = await heldStreams(target, upstreamOrigin, body, n, async () => {
          v8Open = await v8Heap(target.origin);
        });
        const rssKb = ((rss.rssOpenMb - rss.rssBeforeMb) * 1024) / n;
        const perStream = (before: number, open: number) => ((open - before) / 1024 / n).toFixed(1);
        await sleep(300);
        const first = await snapshot(child, dir, target.origin);
        let second = '';
        await heldStreams(target, upstreamOrigin, body, n, async () => {
          second = await snapshot(child, dir, target.origin);
        });
        const diff = diffSnapshots(readSnapshot(first), readSnapshot(second));
        if (!opts.keep) for (const f of [first, second]) rmSync(f);
        const heapKb = diff.newBytes / 1024 / n;
        log(`\n== ${n} held streams, ${label} ==`);
        log(
          `RSS ${rss.rssBeforeMb.toFixed(1)} -> ${rss.rssOpenMb.toFixed(1)} MB: ${rssKb.toFixed(1)} KB per stream; ` +
            `heap kept per stream ${heapKb.toFixed(1)} KB (new objects' self size), so about ` +
            `${(rssKb - heapKb).toFixed(1)} KB native; heap ${(diff.totalBytesBefore / 2 ** 20).toFixed(1)} -> ` +
            `${(diff.totalBytesAfter / 2 ** 20).toFixed(1)} MB`,
        );
        log(
          `  of that RSS, V8's heap: committed ${perStream(v8Before.total, v8Open.total)} KB/stream ` +
            `(used ${perStream(v8Before.used, v8Open.used)}, external ${perStream(v8Before.external, v8Open.external)}); ` +
            `the rest (${(rssKb - (v8Open.total - v8Before.total) / 1024 / n).toFixed(1)} KB/stream) is outside it`,
        );
        log(`\nper stream, by constructor (KB, objects):`);
        for (const g of diff.byGroup.slice(0, opts.top))
          log(`  ${kb(g.bytes / n).padStart(7)}  ${(g.count / n).toFixed(1).padStart(6)}  ${g.group}`);
        log(`\nper stream, by first strong retainer (KB, objects):`);
        for (const g of diff.byRetainer.slice(0, opts.top))
          log(`  ${kb(g.bytes / n).padStart(7)}  ${(g.count / n).toFixed(1).padStart(6)}  ${g.group}`);
        summary.push(`${label}: RSS ${rssKb.toFixed(1)} KB/stream, heap ${heapKb.toFixed(1)} KB/stream`);
      } finally {
        await stopChild(child);
      }
    }
    log(`\n${summary.join('\n')}`);
    if (opts.keep) log(`snapshots kept in ${dir}`);
  } finally {
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
    await stopAll();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  void stopAll().finally(() => process.exit(1));
});
