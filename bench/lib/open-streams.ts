/**
 * The open-stream probes, run after the timed cases:
 * - **RSS per open stream**: 1,000 streams held open at once (the fake upstream sends a few
 *   events, then holds every stream until GET /bench/release), with and without a tool declared;
 *   (RSS with them open - RSS before) / streams, for toolproof and for the Node hop.
 * - **event-loop delay under 500 streams with tools**: 500 concurrent forced-final_answer streams
 *   whose events trickle in (one per TRICKLE_MS per stream, a model generating), closed loop for
 *   a fixed time, twice: in steady state (arrivals spread, ~167 new streams/s keep 500 open) and
 *   in synchronized bursts (all 500 start, end and restart together). toolproof's own event-loop delay comes from its /metrics: prom-client's
 *   nodejs_eventloop_lag_* (perf_hooks.monitorEventLoopDelay, 10 ms resolution) are reset at
 *   every scrape, so a scrape before and one after the window give the window's p50 / p99 / max.
 *   The same read over an idle window is the floor (the sampling timer's own resolution).
 */
import { readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { streamBody, TRICKLE_MS, toolsStreamBody } from './fixtures.js';
import { runLoad, summarize } from './load.js';
import {
  CLK_TCK,
  type Child,
  cpuTicks,
  groupCpuSplit,
  groupMemoryMb,
  machineTicks,
  stopChild,
} from './procs.js';

export interface ProbeTarget {
  name: string;
  origin: string;
  /** Pids whose RSS / CPU count (toolproof's workers included). */
  pids: number[];
  /** Reads the event-loop delay from its /metrics (toolproof only). */
  metrics?: boolean;
}

export interface MemoryProbe {
  target: string;
  tools: boolean;
  streams: number;
  opened: number;
  rssBeforeMb: number;
  rssOpenMb: number;
  perStreamKb: number;
}

export interface EventLoopProbe {
  target: string;
  /** steady: arrivals spread over a stream's duration; burst: all streams start together. */
  mode: 'steady' | 'burst';
  streams: number;
  chunksPerStream: number;
  trickleMs: number;
  windowMs: number;
  completed: number;
  errors: number;
  /** Events relayed per second over the window (completed streams x events / window). */
  chunksPerSecond: number;
  /** The target's CPU over the window, in cores (1 = one core busy). */
  cpuCores: number;
  /** The whole machine's busy CPU over the window, in cores (bench, toolproof and anything else). */
  machineCores: number;
  /** Of which the load generator (this process) and the fake upstream, in cores. */
  loadgenCores: number;
  upstreamCores: number;
  idle: LagRead;
  loaded: LagRead;
  firstByteP50Ms: number;
  firstByteP99Ms: number;
  gc: GcWindow;
  /** The window in epoch ms (to cut the sampler's series). */
  epochFrom?: number;
  epochTo?: number;
  /** From bench/lib/loop-sampler.mjs inside toolproof, when its samples could be read. */
  sampled?: SampledDelay;
}

/**
 * The sampler's view of the window (10 ms timer): the delay as measured (wall clock) and the part
 * of it toolproof's own CPU explains (for a turn: CPU used since the previous tick minus the
 * timer's interval, at most the delay); the rest was spent waiting for a core.
 */
export interface SampledDelay {
  samples: number;
  p99Ms: number;
  maxMs: number;
  /** p99 / max of the own-CPU part: the delay on a machine with a free core (an upper bound). */
  ownP99Ms: number;
  ownMaxMs: number;
}

const SAMPLER_INTERVAL_MS = 10;

function attachSamples(probes: EventLoopProbe[], file: string, log: (line: string) => void): void {
  let flat: number[];
  try {
    flat = JSON.parse(readFileSync(file, 'utf8')) as number[];
    rmSync(file, { force: true });
  } catch (err) {
    log(`event-loop sampler: no samples (${(err as Error).message})`);
    return;
  }
  for (const p of probes) {
    const delays: number[] = [];
    const own: number[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const at = flat[i]!;
      if (p.epochFrom === undefined || at < p.epochFrom || at > (p.epochTo ?? 0)) continue;
      const delay = flat[i + 1]!;
      delays.push(delay);
      own.push(Math.min(delay, Math.max(0, flat[i + 2]! - SAMPLER_INTERVAL_MS)));
    }
    const d = summarize(delays);
    const o = summarize(own);
    p.sampled = { samples: d.n, p99Ms: d.p99, maxMs: d.max, ownP99Ms: o.p99, ownMaxMs: o.max };
  }
}

/** "own CPU p99 12 ms, max 40 ms (sampler: p99 90 ms, max 210 ms)". */
export function fmtSampled(s: SampledDelay | undefined): string {
  if (!s || s.samples === 0) return 'sampler: n/a';
  return (
    `own CPU p99 ${s.ownP99Ms.toFixed(1)} ms, max ${s.ownMaxMs.toFixed(1)} ms (sampler, ` +
    `${s.samples} turns: p99 ${s.p99Ms.toFixed(1)} ms, max ${s.maxMs.toFixed(1)} ms)`
  );
}

interface LagRead {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Cumulative GC pauses since start (prom-client's nodejs_gc_duration_seconds): count, ms. */
  gcCount: number;
  gcMs: number;
}

/** GC in a window: pauses, their total and its share of the window (from two LagReads). */
export interface GcWindow {
  count: number;
  totalMs: number;
  share: number;
}

export interface OpenStreamsReport {
  memory: MemoryProbe[];
  eventLoop: EventLoopProbe[];
}

const HEADERS = { 'content-type': 'application/json', accept: 'text/event-stream' };

async function getJson(url: string): Promise<unknown> {
  const res = await request(url, { headersTimeout: 10_000, bodyTimeout: 10_000 });
  return res.body.json();
}

/**
 * Opens `n` held streams, waits for every first byte, reads RSS, releases them, drains.
 * `whileOpen` runs once they are all open, after the RSS read (bench/heap-streams.ts takes a heap
 * snapshot there).
 */
export async function heldStreams(
  target: ProbeTarget,
  upstreamOrigin: string,
  body: Buffer,
  n: number,
  whileOpen?: () => Promise<void>,
): Promise<{ opened: number; rssBeforeMb: number; rssOpenMb: number }> {
  const pool = new Pool(target.origin, { connections: n + 8, pipelining: 1, keepAliveTimeout: 60_000 });
  try {
    const rssBeforeMb = groupMemoryMb(target.pids).rss;
    let opened = 0;
    let allOpen: () => void = () => {};
    const everyoneOpen = new Promise<void>((resolve) => {
      allOpen = resolve;
    });
    const streams = Array.from({ length: n }, async () => {
      const res = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: HEADERS,
        body,
      });
      let first = true;
      for await (const _chunk of res.body) {
        if (first) {
          first = false;
          if (++opened === n) allOpen();
        }
      }
      return res.statusCode;
    });
    const settled = Promise.allSettled(streams);
    const timedOut = await Promise.race([everyoneOpen.then(() => false), sleep(60_000).then(() => true)]);
    // Let buffers settle (the last sockets' first writes, lazily allocated parser state).
    await sleep(500);
    const rssOpenMb = groupMemoryMb(target.pids).rss;
    if (!timedOut && whileOpen) await whileOpen();
    const held = ((await getJson(`${upstreamOrigin}/bench/held`)) as { held: number }).held;
    await getJson(`${upstreamOrigin}/bench/release`);
    const results = await settled;
    const failed = results.filter((r) => r.status === 'rejected' || r.value !== 200).length;
    if (timedOut || failed > 0 || held < n) {
      throw new Error(
        `${target.name}: ${opened}/${n} streams opened, ${held} held upstream, ${failed} failed` +
          `${timedOut ? ' (timed out after 60 s)' : ''}`,
      );
    }
    return { opened, rssBeforeMb, rssOpenMb };
  } finally {
    await pool.destroy();
  }
}

const NO_LAG: LagRead = { p50Ms: NaN, p99Ms: NaN, maxMs: NaN, gcCount: NaN, gcMs: NaN };

/** toolproof's lag and GC from its /metrics (NaN for a target without them: the hop). */
async function readLag(target: ProbeTarget): Promise<LagRead> {
  if (!target.metrics) return NO_LAG;
  const res = await request(`${target.origin}/metrics`, { headersTimeout: 10_000 });
  const text = await res.body.text();
  const value = (name: string) =>
    Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]) *
    1000;
  // Summed over the kinds (minor, major, incremental, weakcb).
  const gcSum = (suffix: string) =>
    [...text.matchAll(new RegExp(`^nodejs_gc_duration_seconds_${suffix}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );
  return {
    p50Ms: value('p50'),
    p99Ms: value('p99'),
    maxMs: value('max'),
    gcCount: gcSum('count'),
    gcMs: gcSum('sum') * 1000,
  };
}

/**
 * One measured window of `streams` concurrent trickling tool streams (closed loop).
 * - steady: the workers' first requests are spread evenly over one stream's duration, so about
 *   streams / duration new streams per second keep `streams` open; the window starts once all are
 *   open, and its first-byte figures are those of the streams started inside it.
 * - burst: all workers start in the same turn and, every stream lasting the same, end and restart
 *   together: `streams` requests at once every stream duration (the window drains at its end).
 */
async function eventLoopWindow(o: {
  target: ProbeTarget;
  pool: Pool;
  body: Buffer;
  streams: number;
  chunks: number;
  windowMs: number;
  mode: 'steady' | 'burst';
  idle: LagRead;
  upstreamPid: number;
}): Promise<EventLoopProbe> {
  const { target: tp, pool, body, streams, chunks, windowMs, mode } = o;
  const streamMs = chunks * TRICKLE_MS;
  const rampMs = mode === 'steady' ? streamMs + 500 : 0;
  const cpu = () => {
    const c = groupCpuSplit(tp.pids);
    return (c.user + c.sys) / CLK_TCK;
  };
  const load = runLoad({
    pool,
    body,
    stream: true,
    concurrency: streams,
    durationMs: rampMs + windowMs,
    ...(mode === 'steady' ? { spreadStartMs: streamMs } : {}),
  });
  if (rampMs) await sleep(rampMs);
  const before = await readLag(tp); // resets the histogram: the window starts here
  const cpu0 = cpu();
  const machine0 = machineTicks();
  const upstream0 = cpuTicks(o.upstreamPid);
  const loadgen0 = process.cpuUsage();
  const t0 = performance.now();
  if (mode === 'steady') await sleep(windowMs);
  else await load; // the last round's streams drain inside the window
  const loaded = await readLag(tp);
  const cpuSeconds = cpu() - cpu0;
  const machineSeconds = (machineTicks() - machine0) / CLK_TCK;
  const upstreamSeconds = (cpuTicks(o.upstreamPid) - upstream0) / CLK_TCK;
  const loadgen = process.cpuUsage(loadgen0);
  const t1 = performance.now();
  const res = await load;
  // steady: the streams started inside the window (in steady state as many end in it).
  const inWindow = res.starts.flatMap((s, i) => (s >= t0 && s < t1 ? [i] : []));
  const counted = mode === 'steady' ? inWindow.length : res.count - res.errors;
  const fb = summarize(mode === 'steady' ? inWindow.map((i) => res.firstByte[i]!) : res.firstByte);
  const wallMs = t1 - t0;
  return {
    target: tp.name,
    mode,
    streams,
    chunksPerStream: chunks,
    trickleMs: TRICKLE_MS,
    windowMs: wallMs,
    completed: counted,
    errors: res.errors,
    chunksPerSecond: (counted * chunks) / (wallMs / 1000),
    cpuCores: cpuSeconds / (wallMs / 1000),
    machineCores: machineSeconds / (wallMs / 1000),
    loadgenCores: (loadgen.user + loadgen.system) / 1e3 / wallMs,
    upstreamCores: upstreamSeconds / (wallMs / 1000),
    idle: o.idle,
    loaded,
    firstByteP50Ms: fb.p50,
    firstByteP99Ms: fb.p99,
    gc: {
      count: loaded.gcCount - before.gcCount,
      totalMs: loaded.gcMs - before.gcMs,
      share: (loaded.gcMs - before.gcMs) / wallMs,
    },
  };
}

/** "12% of the window, 40 pauses, mean 3.1 ms" (wall-clock pauses, waiting for a core included). */
export function fmtGc(gc: GcWindow): string {
  return (
    `${(gc.share * 100).toFixed(0)}% of the window (${gc.count} pauses, mean ` +
    `${(gc.totalMs / Math.max(1, gc.count)).toFixed(1)} ms)`
  );
}

/** The steady and the burst window on one freshly started target (stopped by the caller). */
async function eventLoopProbes(
  target: ProbeTarget,
  quick: boolean,
  upstreamPid: number,
): Promise<EventLoopProbe[]> {
  const streams = 500;
  const chunks = 60;
  const windowMs = quick ? 4_000 : 8_000;
  const body = toolsStreamBody({ chunks, mode: 'trickle' });
  const pool = new Pool(target.origin, { connections: streams + 8, pipelining: 1, keepAliveTimeout: 60_000 });
  const probes: EventLoopProbe[] = [];
  try {
    // Warm-up at full concurrency (connections, JIT), unmeasured.
    await runLoad({ pool, body, stream: true, concurrency: streams, durationMs: 1_500 });
    await readLag(target);
    await sleep(2_000);
    const idle = await readLag(target);
    for (const mode of ['steady', 'burst'] as const) {
      const from = Date.now();
      const probe = await eventLoopWindow({
        target,
        pool,
        body,
        streams,
        chunks,
        windowMs,
        mode,
        idle,
        upstreamPid,
      });
      probes.push({ ...probe, epochFrom: from, epochTo: Date.now() });
      await sleep(1_000);
    }
  } finally {
    await pool.destroy();
  }
  return probes;
}

/** One probe as a line: delay, throughput, CPU, first byte, GC, the sampler's split. */
export function fmtProbe(e: EventLoopProbe): string {
  const lag = Number.isFinite(e.loaded.p99Ms)
    ? `event-loop delay p99 ${e.loaded.p99Ms.toFixed(1)} ms, max ${e.loaded.maxMs.toFixed(1)} ms (idle p99 ` +
      `${e.idle.p99Ms.toFixed(1)} ms); `
    : '';
  return (
    `${lag}${Math.round(e.chunksPerSecond)} events/s on ${e.cpuCores.toFixed(2)} cores ` +
    `(${((e.cpuCores * 1e6) / e.chunksPerSecond).toFixed(1)} µs CPU per event; machine ${e.machineCores.toFixed(2)} ` +
    `of ${cpus().length} busy, load generator ${e.loadgenCores.toFixed(2)}, fake upstream ` +
    `${e.upstreamCores.toFixed(2)}); first byte p50 ${e.firstByteP50Ms.toFixed(1)} / p99 ` +
    `${e.firstByteP99Ms.toFixed(1)} ms; ${Number.isFinite(e.gc.share) ? `GC ${fmtGc(e.gc)}; ` : ''}` +
    `${fmtSampled(e.sampled)}; ${e.errors} errors`
  );
}

/** A probe target started fresh for each probe (and stopped after it). */
type Launcher = (options?: { loopSamples?: string }) => Promise<ProbeTarget & { child: Child }>;

export async function probeOpenStreams(options: {
  quick: boolean;
  upstreamOrigin: string;
  upstreamPid: number;
  /** toolproof first (its event-loop delay is read too), then the Node hop. */
  launchers: Launcher[];
  /** Which probes run: RSS per held stream, event-loop delay (steady and burst). */
  memory: boolean;
  eventLoop: boolean;
  log: (line: string) => void;
}): Promise<OpenStreamsReport> {
  const { log } = options;
  const report: OpenStreamsReport = { memory: [], eventLoop: [] };
  const HELD = 1000;
  for (const launch of options.memory ? options.launchers : []) {
    for (const tools of [false, true]) {
      const target = await launch();
      const body = tools ? toolsStreamBody({ mode: 'hold' }) : streamBody({ mode: 'hold' });
      // Warm the path once (code, pools), unmeasured.
      await heldStreams(target, options.upstreamOrigin, body, 100);
      await sleep(300);
      const r = await heldStreams(target, options.upstreamOrigin, body, HELD);
      const probe: MemoryProbe = {
        target: target.name,
        tools,
        streams: HELD,
        ...r,
        perStreamKb: ((r.rssOpenMb - r.rssBeforeMb) * 1024) / HELD,
      };
      report.memory.push(probe);
      log(
        `open streams: ${target.name}, ${HELD} held ${tools ? 'with a tool' : 'without tools'}: RSS ` +
          `${r.rssBeforeMb.toFixed(1)} -> ${r.rssOpenMb.toFixed(1)} MB, ${probe.perStreamKb.toFixed(1)} KB per open stream`,
      );
      await stopChild(target.child);
    }
  }

  // Both targets (the hop as the floor of the per-event transport cost), each with
  // bench/lib/loop-sampler.mjs preloaded: it splits each late turn into the process's own CPU and
  // time spent waiting for a core (written at exit, read once the child stopped).
  for (const launch of options.eventLoop ? options.launchers : []) {
    const samplesFile = join(tmpdir(), `toolproof-bench-loop-${process.pid}-${Date.now()}.json`);
    const target = await launch({ loopSamples: samplesFile });
    const probes = await eventLoopProbes(target, options.quick, options.upstreamPid);
    await stopChild(target.child);
    attachSamples(probes, samplesFile, log);
    for (const p of probes) {
      report.eventLoop.push(p);
      log(
        `event-loop delay in ${p.target}, ${p.mode === 'steady' ? 'arrivals spread' : 'synchronized bursts'}: ${fmtProbe(p)}`,
      );
    }
  }
  return report;
}
