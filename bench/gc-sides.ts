/**
 * Each side of issue 28's A/B in a process of its own (off, capture, tracing, both), as
 * `npm run bench`'s A/B runs them, with each process's collections counted (--trace-gc-nvp):
 * scavenges, full collections, their pauses and helper-thread time, bytes promoted, per request,
 * beside the process's CPU per request. What the one-process twin (tracing-twin.ts --quad) cannot
 * see: a cost of the whole process (its heap's size, its full collections) that a side sets off.
 *
 *   npx tsx bench/gc-sides.ts [--paced] [--cycles=8] [--slice=32] [--sides=off,off2,cap,trace,both,unsampled (start order)]
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareServer } from './lib/build.js';
import { burst } from './lib/burst.js';
import { AGENT_TURN_EVENTS, agentTurn, PACED_MS } from './lib/fixtures.js';
import { cycleOrder, groupCpuNs } from './lib/overhead-ab.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { type GcCounts, startAbToolproof, startFakeUpstream, stopAll } from './lib/procs.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const i = a.indexOf('=');
    return i < 0 ? [a.replace(/^--/, ''), ''] : [a.slice(0, i).replace(/^--/, ''), a.slice(i + 1)];
  }),
);
const CYCLES = Number(args.get('cycles') || 8);
const SLICE = Number(args.get('slice') || 32);
const turn = args.has('paced')
  ? agentTurn(AGENT_TURN_EVENTS, { mode: 'trickle', tickMs: PACED_MS })
  : agentTurn();

async function main(): Promise<void> {
  const serverArgs = prepareServer(ROOT, 'build', console.log);
  const upstream = await startFakeUpstream(ROOT);
  const sink = await startOtlpSink();
  const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
  const all: Array<[string, Record<string, string>]> = [
    ['off', { TOOLPROOF_CAPTURE_MB: '0' }],
    // off again (A/A): how far two identical processes read apart.
    ['off2', { TOOLPROOF_CAPTURE_MB: '0' }],
    ['cap', { TOOLPROOF_CAPTURE_MB: '10' }],
    ['trace', { TOOLPROOF_CAPTURE_MB: '0', ...otlp }],
    ['both', { TOOLPROOF_CAPTURE_MB: '10', ...otlp }],
    // Tracing loaded and exporting nothing: what loading it costs every request, sampled or not.
    ['unsampled', { TOOLPROOF_CAPTURE_MB: '0', ...otlp, OTEL_TRACES_SAMPLER: 'always_off' }],
  ];
  const want = args.get('sides')?.split(',');
  // In the order given (start order: the first side listed starts first).
  const specs = want ? want.map((n) => all.find(([m]) => m === n)!) : all;
  const sides = [];
  for (const [name, env] of specs) {
    const gc: GcCounts = { scavenge: 0, major: 0 };
    const tp = await startAbToolproof({
      label: name,
      upstreamOrigin: upstream.origin,
      env,
      args: serverArgs,
      gc,
      connections: 8,
      cwd: ROOT,
      nvp: true,
    });
    sides.push({ name, gc, ...tp, cpu: 0, requests: 0 });
  }
  const headers = { ...turn.headers, 'content-type': 'application/json' };
  for (const s of sides) await burst(s.pool, turn.body, SLICE * 3, 8, headers);
  for (const s of sides)
    Object.assign(s.gc, {
      scavenge: 0,
      major: 0,
      allocated: 0,
      promoted: 0,
      survived: 0,
      pauseMs: 0,
      backgroundMs: 0,
    });
  for (let cycle = 0; cycle < CYCLES; cycle++)
    for (const k of cycleOrder(sides.length, cycle)) {
      const s = sides[k]!;
      const t0 = groupCpuNs([s.pid]);
      await burst(s.pool, turn.body, SLICE, 8, headers);
      s.cpu += groupCpuNs([s.pid]) - t0;
      s.requests += SLICE;
    }
  const base = sides[0]!;
  // Each process's huge pages (a process started later may get fewer: a cost of its start, not its side).
  const { readFileSync } = await import('node:fs');
  const huge = (pid: number) =>
    /AnonHugePages:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
  for (const s of sides) {
    const n = s.requests;
    const g = s.gc;
    console.log(
      `${s.name.padEnd(5)} ${(s.cpu / n / 1000).toFixed(0)} µs/request (${((s.cpu / base.cpu) * (base.requests / n)).toFixed(3)}x); per 1,000 requests: ${((g.scavenge * 1000) / n).toFixed(0)} scavenges, ${((g.major * 1000) / n).toFixed(1)} full; per request: pause ${(((g.pauseMs ?? 0) * 1000) / n).toFixed(0)} µs, helper threads ${(((g.backgroundMs ?? 0) * 1000) / n).toFixed(0)} µs, promoted ${((g.promoted ?? 0) / n / 1024).toFixed(1)} KB, allocated ${((g.allocated ?? 0) / n / 1024).toFixed(0)} KB; AnonHugePages ${huge(s.pid)} KB`,
    );
  }
  for (const s of sides) await s.pool.close();
  sink.close();
  await stopAll();
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
