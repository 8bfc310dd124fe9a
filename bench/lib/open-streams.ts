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
import { cpus } from 'node:os';
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

/** Opens `n` held streams, waits for every first byte, reads RSS, releases them, drains. */
async function heldStreams(
  target: ProbeTarget,
  upstreamOrigin: string,
  body: Buffer,
  n: number,
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

async function readLag(origin: string): Promise<LagRead> {
  const res = await request(`${origin}/metrics`, { headersTimeout: 10_000 });
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
  tp: ProbeTarget;
  pool: Pool;
  body: Buffer;
  streams: number;
  chunks: number;
  windowMs: number;
  mode: 'steady' | 'burst';
  idle: LagRead;
  upstreamPid: number;
}): Promise<EventLoopProbe> {
  const { tp, pool, body, streams, chunks, windowMs, mode } = o;
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
  const before = await readLag(tp.origin); // resets the histogram: the window starts here
  const cpu0 = cpu();
  const machine0 = machineTicks();
  const upstream0 = cpuTicks(o.upstreamPid);
  const loadgen0 = process.cpuUsage();
  const t0 = performance.now();
  if (mode === 'steady') await sleep(windowMs);
  else await load; // the last round's streams drain inside the window
  const loaded = await readLag(tp.origin);
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

/** A probe target started fresh for each probe (and stopped after it). */
type Launcher = () => Promise<ProbeTarget & { child: Child }>;

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

  const launchToolproof = options.launchers[0];
  if (launchToolproof && options.eventLoop) {
    const tp = await launchToolproof();
    const streams = 500;
    const chunks = 60;
    const windowMs = options.quick ? 4_000 : 8_000;
    const body = toolsStreamBody({ chunks, mode: 'trickle' });
    const pool = new Pool(tp.origin, { connections: streams + 8, pipelining: 1, keepAliveTimeout: 60_000 });
    try {
      // Warm-up at full concurrency (connections, JIT), unmeasured.
      await runLoad({ pool, body, stream: true, concurrency: streams, durationMs: 1_500 });
      await readLag(tp.origin);
      await sleep(2_000);
      const idle = await readLag(tp.origin);
      for (const mode of ['steady', 'burst'] as const) {
        const probe = await eventLoopWindow({
          tp,
          pool,
          body,
          streams,
          chunks,
          windowMs,
          mode,
          idle,
          upstreamPid: options.upstreamPid,
        });
        report.eventLoop.push(probe);
        log(
          `event-loop delay in ${tp.name}, ${streams} open streams with a tool, ${mode === 'steady' ? 'arrivals spread' : 'synchronized bursts'} ` +
            `(${chunks} events each, one per ${TRICKLE_MS} ms): p99 ${probe.loaded.p99Ms.toFixed(1)} ms, ` +
            `max ${probe.loaded.maxMs.toFixed(1)} ms (idle: p99 ${idle.p99Ms.toFixed(1)} ms); ` +
            `${Math.round(probe.chunksPerSecond)} events/s, ${probe.cpuCores.toFixed(2)} cores (machine: ` +
            `${probe.machineCores.toFixed(2)} of ${cpus().length} busy, load generator ${probe.loadgenCores.toFixed(2)}, ` +
            `fake upstream ${probe.upstreamCores.toFixed(2)}), first byte p50 ` +
            `${probe.firstByteP50Ms.toFixed(1)} / p99 ${probe.firstByteP99Ms.toFixed(1)} ms, GC ${fmtGc(probe.gc)}, ` +
            `${probe.errors} errors`,
        );
        await sleep(1_000);
      }
    } finally {
      await pool.destroy();
      await stopChild(tp.child);
    }
  }
  return report;
}
