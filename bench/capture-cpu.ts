/**
 * Capture on against capture off, each side a toolproof process of its own (as `npm start` runs
 * it), the bench's fake upstream in a third, this process the load
 * generator. Both toolproofs get the same fixed number of requests, in bursts that alternate
 * (the order rotating every round); each burst's CPU is the toolproof process's own
 * (/proc/<pid>/stat), so the load generator and the upstream count on neither side. Printed per
 * case: each side's median µs per request, the median of the per-round ratios and their range.
 *
 * `--server=build|tsx` as `npm run bench` (default build: compiled into bench/results/.build, whose
 * profiles have line numbers).
 *
 * `--cpu-prof`: both toolproofs run under `node --cpu-prof`; at the end each profile's busy time
 * is divided by the requests it served (warm-up included, the same count on both sides), by
 * area (GC, node internals, toolproof's folders, dependencies), and capture's own frames
 * (server/capture/) by inclusive time: a figure that stays steady on a loaded machine, where a
 * burst's CPU time does not.
 *
 *   npx tsx bench/capture-cpu.ts [--cases=short,long] [--requests=2000] [--rounds=6] [--c=32] [--cpu-prof]
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { prepareServer, type ServerMode } from './lib/build.js';
import { toolsStreamBody } from './lib/fixtures.js';
import { median } from './lib/overhead-ab.js';
import {
  CLK_TCK,
  cpuSplit,
  freePort,
  startFakeUpstream,
  startNode,
  stopAll,
  waitForHttp,
} from './lib/procs.js';
import { summarizeProfile } from './lib/profile.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? ''];
  }),
);
const REQUESTS = Number(args.get('requests') || 2000);
const ROUNDS = Number(args.get('rounds') || 6);
const C = Number(args.get('c') || 32);
const PROF = args.has('cpu-prof');
const CASES: Record<string, number> = { short: 8, long: 500 };
const cases = (args.get('cases') || 'short,long').split(',');

const cpuUs = (pid: number) => {
  const c = cpuSplit(pid);
  return ((c.user + c.sys) / CLK_TCK) * 1e6;
};

async function burst(pool: Pool, body: Buffer, n: number): Promise<void> {
  let left = n;
  const worker = async () => {
    while (left-- > 0) {
      const r = await pool.request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body,
      });
      if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}: ${await r.body.text()}`);
      for await (const _ of r.body);
    }
  };
  await Promise.all(Array.from({ length: C }, worker));
}

async function main(): Promise<void> {
  if (args.get('analyze')) return analyze(args.get('analyze')!);
  const serverArgs = prepareServer(ROOT, (args.get('server') || 'build') as ServerMode, console.log);
  const upstream = await startFakeUpstream(ROOT);
  const profDir = mkdtempSync(join(tmpdir(), 'capture-prof-'));
  // --before=DIR: a third side, capture on in another build (e.g. a copy of bench/results/.build
  // made before a change): before and after in the same run.
  const before = args.get('before');
  const sides = [
    { name: 'off', env: { TOOLPROOF_CAPTURE_MB: '0' }, args: serverArgs },
    { name: 'on', env: {}, args: serverArgs },
    ...(before
      ? [
          {
            name: 'before',
            env: {},
            args: serverArgs.map((a) => (a.endsWith('server/main.js') ? join(before, 'server/main.js') : a)),
          },
        ]
      : []),
  ].map((s) => ({
    ...s,
    pid: 0,
    pool: undefined as unknown as Pool,
    served: 0,
    dir: join(profDir, s.name),
    gc: { scavenge: 0, major: 0 },
  }));
  for (const s of sides) {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith('TOOLPROOF_') && !k.startsWith('OTEL_')) env[k] = v;
    Object.assign(env, {
      TOOLPROOF_UPSTREAM_URL: `${upstream.origin}/v1`,
      TOOLPROOF_HOST: '127.0.0.1',
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_LOG_LEVEL: 'warn',
      ...s.env,
    });
    const child = startNode({
      name: `toolproof (capture ${s.name})`,
      args: [...(PROF ? ['--cpu-prof', `--cpu-prof-dir=${s.dir}`] : []), '--trace-gc', ...s.args],
      env,
      cwd: ROOT,
    });
    // --trace-gc: one line per collection on stdout; counted per kind (steady on a loaded
    // machine, where CPU times are not).
    let partial = '';
    child.proc.stdout?.on('data', (d: Buffer) => {
      const lines = (partial + d.toString('latin1')).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        if (l.includes('Scavenge')) s.gc.scavenge++;
        else if (l.includes('Mark-Compact') || l.includes('Mark-sweep')) s.gc.major++;
      }
    });
    await waitForHttp(child, `http://127.0.0.1:${port}/health`, 60_000);
    s.pid = child.pid;
    s.pool = new Pool(`http://127.0.0.1:${port}`, { connections: C, pipelining: 1 });
  }
  for (const name of cases) {
    const events = CASES[name];
    if (events === undefined) throw new Error(`unknown case ${name} (short, long)`);
    const body = toolsStreamBody({ chunks: events });
    const n = name === 'long' ? Math.max(200, Math.floor(REQUESTS / 8)) : REQUESTS;
    for (let i = 0; i < 2; i++) for (const s of sides) await burst(s.pool, body, n);
    for (const s of sides) s.served += 2 * n;
    const cpu = sides.map(() => [] as number[]);
    const gc0 = sides.map((s) => ({ ...s.gc }));
    for (let r = 0; r < ROUNDS; r++) {
      const order = sides.map((_, i) => (i + r) % sides.length);
      for (const i of order) {
        const s = sides[i]!;
        const t0 = cpuUs(s.pid);
        await burst(s.pool, body, n);
        cpu[i]!.push((cpuUs(s.pid) - t0) / n);
        s.served += n;
      }
    }
    // Let the last lines of --trace-gc arrive.
    await new Promise((r) => setTimeout(r, 200));
    console.log(`${name} (${events} events, c=${C}, ${n} requests x ${ROUNDS} rounds), CPU µs per request:`);
    sides.forEach((s, i) => {
      const ratios = cpu[i]!.map((x, r) => x / cpu[0]![r]!);
      console.log(
        `  capture ${s.name.padEnd(6)} ${median(cpu[i]!).toFixed(0).padStart(6)} [${cpu[i]!.map((x) => x.toFixed(0)).join(' ')}]${i === 0 ? '' : `; /off: median ${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x), +${(median(cpu[i]!) - median(cpu[0]!)).toFixed(0)} µs`}; GCs per 1,000 requests: ${(((s.gc.scavenge - gc0[i]!.scavenge) * 1000) / (n * ROUNDS)).toFixed(1)} scavenges, ${(((s.gc.major - gc0[i]!.major) * 1000) / (n * ROUNDS)).toFixed(2)} major`,
      );
    });
  }
  for (const s of sides) await s.pool.close();
  const served = sides.map((s) => s.served);
  await stopAll();
  if (!PROF) return;
  writeFileSync(join(profDir, 'served.json'), JSON.stringify(served));
  analyze(profDir);
}

/** The two profiles of a run (`--analyze=DIR` reads a kept run again). */
function analyze(profDir: string): void {
  const served = JSON.parse(readFileSync(join(profDir, 'served.json'), 'utf8')) as number[];
  const areas = new Map<string, number[]>();
  const own: string[][] = [];
  ['off', 'on'].forEach((name, i) => {
    const dir = join(profDir, name);
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile in ${dir}`);
    const p = summarizeProfile(join(dir, file), [], 2000);
    const per = (ms: number) => (ms * 1000) / served[i]!;
    for (const a of [...p.areas, { area: 'busy', selfMs: p.busyMs }]) {
      const row = areas.get(a.area) ?? [0, 0];
      row[i] = per(a.selfMs);
      areas.set(a.area, row);
    }
    own.push(
      p.ownInclusive
        .filter((f) => f.frame.includes('server/capture/'))
        .map((f) => `    ${per(f.selfMs).toFixed(1).padStart(7)} µs/req  ${f.frame}`),
    );
  });
  console.log(`\nprofiles (${profDir}), µs per request served (off ${served[0]}, on ${served[1]}):`);
  for (const [area, [off, on]] of [...areas.entries()].sort((a, b) => b[1][1]! - a[1][1]!))
    if (Math.max(off!, on!) >= 0.5)
      console.log(
        `  ${area.padEnd(28)} off ${off!.toFixed(1).padStart(8)}  on ${on!.toFixed(1).padStart(8)}  ${(on! - off! >= 0 ? '+' : '') + (on! - off!).toFixed(1)}`,
      );
  console.log("  capture's frames, inclusive (a wrapper includes what it wraps), capture on:");
  console.log(own[1]!.slice(0, 30).join('\n'));
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
