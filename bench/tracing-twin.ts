/**
 * Tracing on against off in ONE toolproof process: two apps of the same build (tracing off, and
 * on with every request sampled; bench/lib/twin-server.mjs), each on its own port, load given to
 * one at a time in slices of a fixed request count, in palindromic cycles (bench/lib/overhead-ab.ts),
 * a slice's CPU being the whole process's (every thread, /proc/<pid>/task/<tid>/schedstat) from
 * its start to its end. One process: no A/B between processes that differ by their luck (their
 * memory layout, their JIT's choices, the cores they land on), which reads ±3-10% between two
 * identical processes on a shared box. What it cannot separate: a collection set off in one
 * app's slice by the other's garbage (both apps share one heap), and the other app's background
 * work (a batch export) in a slice. Printed: the pooled ratio of on to off with a 95% bootstrap
 * interval over the cycles, the median of the per-cycle ratios, and each side's µs per request.
 *
 * `--cpu-prof`: the process under `node --cpu-prof`; its samples are split by the slice they fell
 * in (on's or off's), and the frames whose self time per request differs most between the two
 * are printed: where tracing's cost lands, its own frames and the rest of the server's alike.
 *
 * `--before=DIR`: a third app, another build's with tracing on (a copy of bench/results/.build
 * made before a change), in the same process: before and after measured on one heap and JIT.
 * But that app runs its own copy of every module (the server's code, not only the change), which
 * only its slices warm: an identical copy of the build read on / before 0.873x [0.824, 0.924] on
 * the short stream with `--capture` (capture34, load ~17); capture34's change read 0.916-0.925x
 * that way and 0.951-0.981x as a same-build switch.
 * To weigh a change, prefer a switch read while an app of the same build is made
 * (`--before=bench/results/.build` with `TWIN_BEFORE_ENV`), or read `--before` beside such an A/A.
 *
 * `--capture[=MB]`: capture instead of tracing: the `on` (and `before`) apps keep a capture ring
 * (10 MB unless given) with tracing off; capture on against off in one process. (`--calls` times
 * tracing's calls only: bench/capture-cpu.ts --calls times capture's.) `TWIN_BEFORE_ENV="K=V;..."`
 * in the environment: variables set while the before app is built (a switch an experiment reads
 * then), so that `--before=bench/results/.build` compares one build with and without it.
 *
 * `--quad`: four apps, off, `on` (tracing), `cap` (capture, 10 MB or --capture's) and `both`
 * (capture and tracing), each against off, and the excess of both over the sum of the two alone
 * (issue 28), with each side's collections.
 *
 * `--overcap[=MB]`: every app captures (10 MB unless given): `off` is capture alone, `on` (and
 * `before`) capture and tracing, so `on`'s figure is what tracing adds over capture (issue 28's
 * both-on less capture-alone), in one process; with `--before` and `TWIN_BEFORE_ENV`, a tracing
 * switch weighed with capture on (unified28).
 *
 * `--sampler=NAME[:ARG]`: the traced apps' OTEL_TRACES_SAMPLER (and _ARG), e.g.
 * `--sampler=parentbased_traceidratio:0.1`: what tracing costs when only some requests are sampled.
 *
 * `--cases=paced`: the agent turn as a backend streams it (one event a write every PACED_MS, as
 * `npm run bench`'s A/B workload `paced`), c=8.
 *
 * `--calls`: the process runs a copy of the build (and of --before's) with tracing's calls timed
 * one by one (bench/lib/tracing-calls.ts): µs per traced request per call, inside the server,
 * warm-up included, printed at the end (with --before, its build's calls beside: each call of
 * the two builds in the same process and slices alternating).
 *
 *   npx tsx bench/tracing-twin.ts [--cases=short,long,agent,paced] [--cycles=40] [--slice=256] [--c=32]
 *     [--cpu-prof] [--top=40] [--before=DIR] [--calls] [--overcap[=MB]]
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { BUILD_DIR, prepareServer, startFlags } from './lib/build.js';
import { burst } from './lib/burst.js';
import { AGENT_TURN_EVENTS, agentTurn, PACED_MS, toolsStreamBody } from './lib/fixtures.js';
import {
  bootstrapRatioCi,
  type CycleCost,
  cycleOrder,
  groupCpuNs,
  median,
  pooledRatio,
} from './lib/overhead-ab.js';
import { startFakeUpstream, startNode, stopAll, waitForLine } from './lib/procs.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { readTracingCalls, timedTracingBuild } from './lib/tracing-calls.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const i = a.indexOf('=');
    return i < 0 ? [a.replace(/^--/, ''), ''] : [a.slice(0, i).replace(/^--/, ''), a.slice(i + 1)];
  }),
);
const CYCLES = Number(args.get('cycles') || 40);
const C = Number(args.get('c') || 32);
const cases = (args.get('cases') || 'short').split(',');
const PROF = args.has('cpu-prof');
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
/** The measured slices, by side (0: off, 1: on, 2: before): monotonic µs, V8's profile clock. */
const windows: Array<{ side: number; from: number; to: number }> = [];
const measured = [0, 0, 0, 0];
/** The side whose slice runs now (-1: none), and each side's collections (--trace-gc-nvp) in its slices. */
let current = -1;
const gcs = [0, 1, 2, 3].map(() => ({ scavenges: 0, allocated: 0, survived: 0, promoted: 0, pauseMs: 0 }));
const nvp = (line: string, name: string): number => {
  const at = line.indexOf(` ${name}=`);
  return at === -1 ? 0 : Number.parseFloat(line.slice(at + name.length + 2)) || 0;
};
const BEFORE = args.get('before');
const QUAD = args.has('quad');
const NAMES: readonly string[] = QUAD
  ? ['off', 'on', 'cap', 'both']
  : BEFORE
    ? ['off', 'on', 'before']
    : ['off', 'on'];
const CALLS = args.has('calls');
const HEAP = args.has('heap');
const SAMPLER = args.get('sampler');

async function main(): Promise<void> {
  prepareServer(ROOT, 'build', console.log);
  const upstream = await startFakeUpstream(ROOT);
  const sink = await startOtlpSink();
  const otlp = sink.origin;
  const profDir = PROF ? mkdtempSync(join(tmpdir(), 'tracing-twin-')) : undefined;
  const callsDir = CALLS ? mkdtempSync(join(tmpdir(), 'tracing-calls-')) : undefined;
  const buildDir = CALLS
    ? timedTracingBuild(join(ROOT, BUILD_DIR), join(ROOT, 'bench/results/.tracing-calls'))
    : join(ROOT, BUILD_DIR);
  const child = startNode({
    name: 'toolproof twins',
    args: [
      ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
      '--trace-gc-nvp',
      ...startFlags(ROOT),
      // --heap: no scavenge while a side's requests are counted, and gc() for the baselines.
      ...(HEAP ? ['--expose-gc', '--max-semi-space-size=256', '--min-semi-space-size=256'] : []),
      join(ROOT, 'bench/lib/twin-server.mjs'),
      buildDir,
      upstream.origin,
      otlp,
      ...(BEFORE
        ? [
            CALLS
              ? timedTracingBuild(BEFORE, join(ROOT, 'bench/results/.tracing-calls-before'), 'before:')
              : BEFORE,
          ]
        : []),
    ],
    cwd: ROOT,
    stdinPipe: true,
    env: {
      ...process.env,
      ...(callsDir ? { TP_CALLS_OUT: join(callsDir, 'calls') } : {}),
      ...(QUAD ? { TWIN_MODE: 'quad', TWIN_CAPTURE_MB: args.get('capture') || '10' } : {}),
      // --overcap: capture on in every app (off: capture alone; on, before: capture and tracing).
      ...(args.has('overcap')
        ? { TWIN_MODE: 'overcap', TWIN_CAPTURE_MB: args.get('overcap') || args.get('capture') || '10' }
        : {}),
      ...(args.has('capture') && !QUAD && !args.has('overcap')
        ? { TWIN_MODE: 'capture', TWIN_CAPTURE_MB: args.get('capture') || '10' }
        : {}),
      ...(SAMPLER
        ? { TWIN_SAMPLER: SAMPLER.split(':')[0], TWIN_SAMPLER_ARG: SAMPLER.split(':')[1] ?? '' }
        : {}),
    },
  });
  const ports = JSON.parse(await waitForLine(child, /(\{"off":\d+,"on":\d+[^}]*\})/, 60_000)) as Record<
    string,
    number
  >;
  // Each collection counted to the side whose slice it fell in (a scavenge is set off by the
  // allocation of the slice that runs; the other sides' leftovers are in it too).
  let partial = '';
  child.proc.stdout?.on('data', (d: Buffer) => {
    const lines = (partial + d.toString('latin1')).split('\n');
    partial = lines.pop() ?? '';
    if (current < 0) return;
    const g = gcs[current]!;
    for (const l of lines) {
      if (!l.includes(' gc=')) continue;
      if (l.includes(' gc=s ')) g.scavenges++;
      g.allocated += nvp(l, 'allocated');
      g.survived += nvp(l, 'new_space_survived');
      g.promoted += nvp(l, 'promoted');
      g.pauseMs += nvp(l, 'pause');
    }
  });
  const sides = NAMES.map((name) => ({
    name,
    pool: new Pool(`http://127.0.0.1:${ports[name]}`, { connections: C, pipelining: 1 }),
  }));
  const pids = [child.pid];
  console.log(`one process (pid ${child.pid}): ${NAMES.map((n) => `${n} on :${ports[n]}`).join(', ')}`);
  if (HEAP) {
    await heapPerRequest(child, sides, cases);
    for (const s of sides) await s.pool.close();
    child.proc.stdin?.end();
    await child.exited;
    await stopAll();
    sink.close();
    return;
  }
  for (const name of cases) {
    const agent =
      name === 'agent'
        ? agentTurn()
        : name === 'paced'
          ? agentTurn(AGENT_TURN_EVENTS, { mode: 'trickle', tickMs: PACED_MS })
          : undefined;
    const events = name === 'short' ? 8 : name === 'long' ? 500 : AGENT_TURN_EVENTS;
    const body = agent ? agent.body : toolsStreamBody({ chunks: events });
    const headers = agent?.headers;
    const c = agent ? Math.min(C, 8) : C;
    const slice = Number(args.get('slice') || (name === 'short' ? 256 : name === 'long' ? 64 : 32));
    // Warm-up: both apps, then three unmeasured cycles.
    for (let i = 0; i < 4; i++) for (const s of sides) await burst(s.pool, body, slice * 2, c, headers);
    const costs = sides.map(() => [] as CycleCost[]);
    const exports0 = sink.exports();
    const bytes0 = sink.bytes();
    const n = sides.length;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const cpu = sides.map(() => 0);
      for (const i of cycleOrder(n, cycle)) {
        const t0 = groupCpuNs(pids);
        const from = nowUs();
        current = i;
        await burst(sides[i]!.pool, body, slice, c, headers);
        current = -1;
        windows.push({ side: i, from, to: nowUs() });
        measured[i]! += slice;
        cpu[i]! += groupCpuNs(pids) - t0;
      }
      // Each side ran two slices in the cycle (the palindrome).
      for (let i = 0; i < n; i++) costs[i]!.push({ cpu: cpu[i]!, requests: 2 * slice });
    }
    const us = (k: number) => costs[k]!.reduce((a, x) => a + x.cpu, 0) / 1000 / (CYCLES * 2 * slice);
    console.log(
      `${name} (${events} events, c=${c}, ${CYCLES} cycles of 2 x ${slice} requests a side; ${sink.exports() - exports0} exports, ${Math.round((sink.bytes() - bytes0) / (CYCLES * 2 * slice * (n - 1)))} bytes a traced request): off ${us(0).toFixed(1)} µs/request`,
    );
    for (let k = 1; k < n; k++) {
      const ratio = pooledRatio(costs[k]!, costs[0]!);
      const ci = bootstrapRatioCi(costs[k]!, costs[0]!);
      const perCycle = costs[k]!.map((x, j) => x.cpu / costs[0]![j]!.cpu);
      console.log(
        `  ${NAMES[k]} ${us(k).toFixed(1)} µs/request (+${(us(k) - us(0)).toFixed(1)}): ${ratio.toFixed(3)}x [${ci[0].toFixed(3)}, ${ci[1].toFixed(3)}] of off, median of cycles ${median(perCycle).toFixed(3)}x`,
      );
    }
    for (let k = 0; k < n; k++) {
      const g = gcs[k]!;
      const req = CYCLES * 2 * slice;
      console.log(
        `  ${NAMES[k]} heap per request (its slices' collections): ${(g.allocated / req / 1024).toFixed(2)} KB allocated, ${(g.survived / req / 1024).toFixed(2)} KB survived a scavenge, ${(g.promoted / req / 1024).toFixed(2)} KB promoted; ${((g.scavenges * 1000) / req).toFixed(1)} scavenges per 1,000 requests, GC pause ${((g.pauseMs * 1000) / req).toFixed(1)} µs`,
      );
    }
    if (QUAD) {
      // Issue 28's both-on excess: what both cost over the sum of each alone, µs a request, with
      // a 95% bootstrap interval over the cycles (each resample pools its cycles' four sides).
      const excessOf = (idx: readonly number[]) => {
        let cpu = 0;
        for (const j of idx)
          cpu += costs[3]![j]!.cpu - costs[2]![j]!.cpu - costs[1]![j]!.cpu + costs[0]![j]!.cpu;
        return cpu / 1000 / (idx.length * 2 * slice);
      };
      const all = costs[0]!.map((_, j) => j);
      let seed = 1;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
      };
      const boot: number[] = [];
      for (let b = 0; b < 4000; b++) boot.push(excessOf(all.map(() => Math.floor(rand() * all.length))));
      boot.sort((a, b) => a - b);
      const g = gcs;
      const pause = (k: number) => (g[k]!.pauseMs * 1000) / (CYCLES * 2 * slice);
      console.log(
        `  both - cap - on + off: ${excessOf(all).toFixed(1)} µs/request [${boot[100]!.toFixed(1)}, ${boot[3899]!.toFixed(1)}]; in the GC pauses ${(pause(3) - pause(2) - pause(1) + pause(0)).toFixed(1)} µs`,
      );
    }
    for (const g of gcs)
      Object.assign(g, { scavenges: 0, allocated: 0, survived: 0, promoted: 0, pauseMs: 0 });
    if (n === 3 && !QUAD) {
      const ratio = pooledRatio(costs[1]!, costs[2]!);
      const ci = bootstrapRatioCi(costs[1]!, costs[2]!);
      console.log(`  on / before: ${ratio.toFixed(3)}x [${ci[0].toFixed(3)}, ${ci[1].toFixed(3)}]`);
    }
  }
  for (const s of sides) await s.pool.close();
  child.proc.stdin?.end();
  await child.exited;
  await stopAll();
  sink.close();
  if (profDir) {
    // The slices and request counts beside the profile, for a later reading of it (bench/profile-split.ts).
    writeFileSync(join(profDir, 'windows.json'), JSON.stringify({ names: NAMES, windows, measured }));
    analyze(profDir);
  }
  if (callsDir) printCalls(callsDir);
}

/**
 * --heap: each side's heap bytes per request, load-free: the heap in use after two full
 * collections, then `requests` requests one at a time (a young generation of 256 MB: no
 * collection meanwhile), the heap then (allocated: grown by the requests, whatever became of it),
 * and after two full collections again (kept: the capture ring's records, a tracing cache). Rounds
 * alternate the sides; the smallest allocation of each side's rounds is printed (a round with a
 * scavenge reads lower: one with any collection, a scavenge or incremental marking's, is not counted).
 */
async function heapPerRequest(
  child: ReturnType<typeof startNode>,
  sides: Array<{ name: string; pool: Pool }>,
  names: string[],
): Promise<void> {
  let lines = '';
  const waiting: Array<(n: { heap: number; gcs: number }) => void> = [];
  child.proc.stdout?.on('data', (d: Buffer) => {
    lines += d.toString('latin1');
    let i = lines.indexOf('\n');
    while (i >= 0) {
      const line = lines.slice(0, i);
      const m = /^\{"heap":(\d+),"gcs":(\d+)\}$/.exec(line);
      lines = lines.slice(i + 1);
      if (m) waiting.shift()?.({ heap: Number(m[1]), gcs: Number(m[2]) });
      i = lines.indexOf('\n');
    }
  });
  const heap = (gc: boolean) =>
    new Promise<{ heap: number; gcs: number }>((r) => {
      waiting.push(r);
      child.proc.stdin?.write(gc ? 'heap gc\n' : 'heap\n');
    });
  for (const name of names) {
    const agent =
      name === 'agent'
        ? agentTurn()
        : name === 'paced'
          ? agentTurn(AGENT_TURN_EVENTS, { mode: 'trickle', tickMs: PACED_MS })
          : undefined;
    const events = name === 'short' ? 8 : name === 'long' ? 500 : AGENT_TURN_EVENTS;
    const body = agent ? agent.body : toolsStreamBody({ chunks: events });
    const headers = agent?.headers;
    const n = Number(args.get('requests') || (agent ? 32 : 256));
    for (const s of sides) await burst(s.pool, body, 64, 4, headers);
    const allocated = sides.map(() => [] as number[]);
    const kept = sides.map(() => [] as number[]);
    for (let round = 0; round < Number(args.get('rounds') || 6); round++)
      for (const k of cycleOrder(sides.length, round).slice(0, sides.length)) {
        const h0 = await heap(true);
        await burst(sides[k]!.pool, body, n, 1, headers);
        const h1 = await heap(false);
        const h2 = await heap(true);
        if (h1.gcs === h0.gcs) allocated[k]!.push((h1.heap - h0.heap) / n);
        kept[k]!.push((h2.heap - h0.heap) / n);
      }
    console.log(`${name} (${events} events, ${n} requests a round, one at a time): heap bytes per request`);
    const min = (xs: number[]) => (xs.length ? Math.min(...xs) : Number.NaN);
    for (const [k, s] of sides.entries())
      console.log(
        `  ${s.name.padEnd(6)} allocated ${min(allocated[k]!).toFixed(0).padStart(8)} (rounds: ${allocated[k]!.map((x) => x.toFixed(0)).join(' ')}); kept after a full collection: median ${median(kept[k]!).toFixed(0)} (${kept[k]!.map((x) => x.toFixed(0)).join(' ')})`,
      );
    if (QUAD) {
      const a = allocated.map(min);
      console.log(`  allocated, both - cap - on + off: ${(a[3]! - a[2]! - a[1]! + a[0]!).toFixed(0)} bytes`);
    }
  }
}

/** --calls: tracing's calls, µs per traced request, inclusive, largest first. */
function printCalls(dir: string): void {
  const file = readdirSync(dir).find((f) => f.startsWith('calls-'));
  if (!file) throw new Error(`no timings in ${dir}`);
  const sides = [
    readTracingCalls(join(dir, file)),
    ...(BEFORE ? [readTracingCalls(join(dir, file), 'before:')] : []),
  ];
  console.log(
    `\ntracing's calls, µs per traced request, inclusive (${BEFORE ? 'on | before' : 'on'}; samples over 200 µs left out: count):`,
  );
  const keys = new Set(sides.flatMap((x) => [...x.perRequest.keys()]));
  for (const k of [...keys].sort(
    (a, b) => (sides[0]!.perRequest.get(b) ?? 0) - (sides[0]!.perRequest.get(a) ?? 0),
  ))
    console.log(
      `  ${k.padEnd(28)} ${sides.map((x) => `${(x.perRequest.get(k) ?? 0).toFixed(2).padStart(7)} (${x.over.get(k) ?? 0})`).join(' | ')}`,
    );
  console.log(
    '  (a request: startRequest, chat, attempt, attemptOpened, finishReason, effects, event, attemptRead, end; LeanTracer.start, LeanSpan.end, encodeAtEnd and processor.onEnd inside them; export outside any request)',
  );
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** Self time per request of each frame in off's slices and in on's, the largest differences first. */
function analyze(profDir: string): void {
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile in ${profDir}`);
  const p = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const sorted = [...windows].sort((a, b) => a.from - b.from);
  const self = NAMES.map(() => new Map<string, number>());
  let at = p.startTime;
  let w = 0;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    while (w < sorted.length && sorted[w]!.to <= at) w++;
    const win = sorted[w];
    if (!win || at < win.from) continue;
    const f = byId.get(p.samples[i]!)!.callFrame;
    const url = f.url.replace(/^.*node_modules\//, '').replace(/^.*\/\.build\//, '');
    const key = `${f.functionName || '(anonymous)'} ${url}${url ? `:${f.lineNumber + 1}` : ''}`;
    const dt = Math.max(0, p.timeDeltas[i + 1] ?? 0);
    self[win.side]!.set(key, (self[win.side]!.get(key) ?? 0) + dt);
  }
  const per = (side: number, key: string) => (self[side]!.get(key) ?? 0) / measured[side]!;
  // --vs=NAME: the side the frames are compared with off (default on; with --quad, e.g. both).
  const vs = Math.max(1, NAMES.indexOf(args.get('vs') || 'on'));
  const keys = new Set([...self[0]!.keys(), ...self[vs]!.keys()]);
  const busy = (side: number) =>
    [...self[side]!].filter(([k]) => !k.startsWith('(idle)')).reduce((a, [, v]) => a + v, 0) /
    measured[side]!;
  console.log(
    `\nprofile (${profDir}), self time in µs per request within each side's slices: busy ${NAMES.map((n, k) => `${n} ${busy(k).toFixed(1)}`).join(', ')}`,
  );
  const isTracing = (k: string) => k.includes('server/tracing/') || k.includes('@opentelemetry/');
  const tracing = (side: number) =>
    [...self[side]!].filter(([k]) => isTracing(k)).reduce((a, [, v]) => a + v, 0) / measured[side]!;
  console.log(
    `  tracing's own frames (self): ${NAMES.map((n, k) => `${n} ${tracing(k).toFixed(1)}`).join(', ')}`,
  );
  console.log(
    `  garbage collector: ${NAMES.map((n, k) => `${n} ${per(k, '(garbage collector) ').toFixed(1)}`).join(', ')}`,
  );
  const rows = [...keys]
    .filter((k) => !k.startsWith('(idle)'))
    .map((k) => [k, per(0, k), per(vs, k)] as const)
    .sort((a, b) => Math.abs(b[2] - b[1]) - Math.abs(a[2] - a[1]));
  const capture = (side: number) =>
    [...self[side]!].filter(([k]) => k.includes('server/capture/')).reduce((a, [, v]) => a + v, 0) /
    measured[side]!;
  console.log(
    `  capture's own frames (self): ${NAMES.map((n, k) => `${n} ${capture(k).toFixed(1)}`).join(', ')}`,
  );
  const vn = NAMES[vs]!;
  console.log(`  ${'off'.padStart(8)} ${vn.padStart(8)} ${`${vn}-off`.padStart(8)}  frame`);
  for (const [k, a, b] of rows.slice(0, Number(args.get('top') || 40)))
    console.log(
      `  ${a.toFixed(2).padStart(8)} ${b.toFixed(2).padStart(8)} ${(b - a).toFixed(2).padStart(8)}  ${k}`,
    );
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
