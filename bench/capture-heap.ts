/**
 * What a capture record keeps on V8's heap, in a whole toolproof (as `npm start` runs it): a
 * figure the machine's load does not move. For each side (capture on, and off as the control),
 * a toolproof process of its own behind the bench's fake upstream serves `--warm` requests of a
 * case, then a heap snapshot (a full collection first: only what is still alive), `--requests`
 * more, a second snapshot; the objects of the second the first lacks, divided by the requests
 * between them, are what each request left alive (with capture on: its record, the ring still
 * under its budget). Printed: heap objects and bytes per request, and the largest groups (by
 * constructor, and by what holds them).
 *
 *   npx tsx bench/capture-heap.ts [--cases=short,agent] [--requests=400] [--warm=200] [--top=12] [--build=DIR] [--capture-mb=N]
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareServer, type ServerMode, serverArgsAt } from './lib/build.js';
import { BENCH_HEADERS, burst } from './lib/burst.js';
import { AGENT_TURN_EVENTS, agentTurn, toolsStreamBody } from './lib/fixtures.js';
import { diffSnapshots, readSnapshot } from './lib/heap-snapshot.js';
import { type GcCounts, startAbToolproof, startFakeUpstream, stopAll } from './lib/procs.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? ''];
  }),
);
const cases = (args.get('cases') || 'short,agent').split(',');
const TOP = Number(args.get('top') || 12);
/**
 * `--capture-mb=N`: the ring's size on the capture side (default the server's, 10 MB). A ring the
 * warm-up fills (e.g. 1 MB and --warm=2000) shows the steady state, records evicted as others come.
 */
const CAPTURE_MB = args.get('capture-mb');

async function snapshot(pid: number, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const fresh = readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    // Wait for its size to settle: it is written in pieces.
    if (fresh.length > 0) {
      const path = join(dir, fresh[0]!);
      let last = -1;
      for (;;) {
        const { size } = statSync(path);
        if (size === last && size > 0) return path;
        last = size;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }
  throw new Error('no heap snapshot');
}

async function main(): Promise<void> {
  // --build=DIR: another build (a copy of bench/results/.build made before a change).
  const build = args.get('build');
  const prepared = prepareServer(ROOT, (args.get('server') || 'build') as ServerMode, console.log);
  const serverArgs = build ? serverArgsAt(prepared, build) : prepared;
  for (const name of cases) {
    // stopAll ends the upstream too: one per case.
    const upstream = await startFakeUpstream(ROOT);
    const agent = name === 'agent' ? agentTurn(AGENT_TURN_EVENTS) : undefined;
    const body = agent?.body ?? toolsStreamBody({ chunks: name === 'long' ? 500 : 8 });
    const headers = agent ? { ...agent.headers, 'content-type': 'application/json' } : BENCH_HEADERS;
    // The agent's records are ~350 KB each as counted: few fit a 10 MB ring.
    const requests = Number(args.get('requests') || (agent ? 20 : name === 'long' ? 100 : 400));
    const warm = Number(args.get('warm') || (agent ? 6 : 200));
    for (const side of ['off', 'on']) {
      const dir = mkdtempSync(join(tmpdir(), `capture-heap-${side}-`));
      const gc: GcCounts = { scavenge: 0, major: 0 };
      const { pid, pool } = await startAbToolproof({
        label: `toolproof (capture ${side})`,
        upstreamOrigin: upstream.origin,
        env:
          side === 'off'
            ? { TOOLPROOF_CAPTURE_MB: '0' }
            : CAPTURE_MB
              ? { TOOLPROOF_CAPTURE_MB: CAPTURE_MB }
              : {},
        args: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`, ...serverArgs],
        gc,
        connections: 8,
        cwd: ROOT,
      });
      await burst(pool, body, warm, 8, headers);
      const first = await snapshot(pid, dir);
      await burst(pool, body, requests, 8, headers);
      const second = await snapshot(pid, dir);
      await pool.close();
      const d = diffSnapshots(readSnapshot(first), readSnapshot(second));
      const objects = d.byGroup.reduce((n, g) => n + g.count, 0);
      console.log(
        `${name}, capture ${side}: ${(objects / requests).toFixed(1)} heap objects, ${(d.newBytes / requests / 1024).toFixed(2)} KB per request left alive (${requests} requests between the snapshots)`,
      );
      for (const g of d.byGroup.slice(0, TOP))
        console.log(
          `    ${(g.count / requests).toFixed(2).padStart(7)} x ${g.group} (${(g.bytes / requests).toFixed(0)} B)`,
        );
      console.log('  held by:');
      for (const g of d.byRetainer.slice(0, TOP))
        console.log(
          `    ${(g.count / requests).toFixed(2).padStart(7)} x ${g.group} (${(g.bytes / requests).toFixed(0)} B)`,
        );
    }
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  async (err) => {
    console.error(err);
    await stopAll();
    process.exit(1);
  },
);
