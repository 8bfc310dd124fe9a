/**
 * npm run bench:startup: time from `npm start` to the first answered request (GET /health = 200),
 * polled every 10 ms on 127.0.0.1, for:
 *   cold   dist/ removed first: a full build, then start
 *   stale  one source file touched: an incremental rebuild, then start
 *   warm   dist/ current: the build is skipped
 *   always the old prestart, a full `tsc -p tsconfig.build.json` before every start (for comparison)
 * Each case runs --runs=N times (default 3); prints min / median / max. cold rebuilds this
 * worktree's dist/ (that is the point); skip it with --no-cold.
 *
 *   npm run bench:startup [-- --runs=5] [-- --no-cold]
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { CLK_TCK, freePort } from './lib/procs.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * CPU time of a process tree in ms: each live process's utime+stime plus cutime+cstime (its
 * children that already exited, e.g. the prestart build), from /proc. Load-independent, unlike
 * the wall time on a busy machine.
 */
function treeCpuMs(root: number): number {
  const parent = new Map<number, number>();
  const own = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(f[1]));
      own.set(Number(entry), Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]));
    } catch {
      // gone
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parent.get(p))
      if (p === root) return true;
    return false;
  };
  let ticks = 0;
  for (const [pid, t] of own) if (inTree(pid)) ticks += t;
  return (ticks / CLK_TCK) * 1000;
}

async function timeToFirstRequest(
  command: string[],
  prepare: () => void,
): Promise<{ wallMs: number; cpuMs: number }> {
  prepare();
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOOLPROOF_')) env[k] = v;
  Object.assign(env, {
    // /health needs no upstream; a URL that is never called keeps the simulator off.
    TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
    TOOLPROOF_HOST: '127.0.0.1',
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'warn',
  });
  const t0 = performance.now();
  // Its own process group: npm, sh and node are stopped together.
  const child: ChildProcess = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env,
    stdio: 'ignore',
    detached: true,
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  try {
    for (;;) {
      if (exited) throw new Error(`${command.join(' ')} exited before it answered`);
      if (performance.now() - t0 > 120_000) throw new Error(`${command.join(' ')}: no answer in 120 s`);
      try {
        const res = await request(`http://127.0.0.1:${port}/health`, { headersTimeout: 1000 });
        await res.body.dump();
        if (res.statusCode === 200) return { wallMs: performance.now() - t0, cpuMs: treeCpuMs(child.pid!) };
      } catch {
        // not listening yet
      }
      await sleep(10);
    }
  } finally {
    if (!exited && child.pid) {
      process.kill(-child.pid, 'SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const runs = Number(args.find((a) => a.startsWith('--runs='))?.slice(7) ?? 3);
  const cold = !args.includes('--no-cold');
  const npmStart = ['npm', 'start', '--silent'];
  const touch = () => {
    const now = new Date();
    utimesSync(join(ROOT, 'server/routing.ts'), now, now);
  };
  const cases: Array<[string, string[], () => void]> = [
    ...(cold
      ? [
          [
            'cold (no dist/)',
            npmStart,
            () => rmSync(join(ROOT, 'dist'), { recursive: true, force: true }),
          ] as [string, string[], () => void],
        ]
      : []),
    ['stale (one file touched)', npmStart, touch],
    ['warm (dist/ current)', npmStart, () => {}],
    ['node dist/server/main.js (no npm)', ['node', '--enable-source-maps', 'dist/server/main.js'], () => {}],
    [
      'always build (the old prestart)',
      ['sh', '-c', 'npm run --silent build && exec node --enable-source-maps dist/server/main.js'],
      () => {},
    ],
  ];
  // Make sure dist/ is current before the warm runs start (and measure nothing here).
  spawnSync(process.execPath, [join(ROOT, 'scripts/build-if-stale.mjs')], { cwd: ROOT, stdio: 'ignore' });
  process.stdout.write(
    `time from the command to the first answered GET /health, ${runs} run(s) each; CPU = the whole ` +
      'process tree (npm, sh, the build, node), which a busy machine does not inflate\n',
  );
  for (const [name, command, prepare] of cases) {
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < runs; i++) {
      const r = await timeToFirstRequest(command, prepare);
      wall.push(r.wallMs);
      cpu.push(r.cpuMs);
    }
    const range = (xs: number[]) =>
      `${Math.min(...xs).toFixed(0)} / ${median(xs).toFixed(0)} / ${Math.max(...xs).toFixed(0)} ms`;
    process.stdout.write(
      `${name.padEnd(34)} wall ${range(wall)}   CPU ${range(cpu)}  (min / median / max)\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`startup bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 2;
});
