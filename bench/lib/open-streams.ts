/**
 * The open-stream probes, run after the timed cases:
 * - **RSS per open stream**: 1,000 streams held open at once (the fake upstream sends a few
 *   events, then holds every stream until GET /bench/release), with and without a tool declared;
 *   (RSS with them open - RSS before) / streams, for toolproof and for the Node hop.
 * - **event-loop delay under 500 streams with tools**: 500 concurrent forced-final_answer streams
 *   whose events trickle in (one per TRICKLE_MS per stream, a model generating), closed loop for
 *   a fixed time. toolproof's own event-loop delay comes from its /metrics: prom-client's
 *   nodejs_eventloop_lag_* (perf_hooks.monitorEventLoopDelay, 10 ms resolution) are reset at
 *   every scrape, so a scrape before and one after the window give the window's p50 / p99 / max.
 *   The same read over an idle window is the floor (the sampling timer's own resolution).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { streamBody, TRICKLE_MS, toolsStreamBody } from './fixtures.js';
import { runLoad, summarize } from './load.js';
import { CLK_TCK, type Child, groupCpuSplit, groupMemoryMb, stopChild } from './procs.js';

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
  idle: LagRead;
  loaded: LagRead;
  firstByteP50Ms: number;
  firstByteP99Ms: number;
}

interface LagRead {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface OpenStreamsReport {
  memory: MemoryProbe[];
  eventLoop?: EventLoopProbe;
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

async function readLag(origin: string): Promise<LagRead> {
  const res = await request(`${origin}/metrics`, { headersTimeout: 10_000 });
  const text = await res.body.text();
  const value = (name: string) =>
    Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]) *
    1000;
  return { p50Ms: value('p50'), p99Ms: value('p99'), maxMs: value('max') };
}

/** A probe target started fresh for each probe (and stopped after it). */
type Launcher = () => Promise<ProbeTarget & { child: Child }>;

export async function probeOpenStreams(options: {
  quick: boolean;
  upstreamOrigin: string;
  /** toolproof first (its event-loop delay is read too), then the Node hop. */
  launchers: Launcher[];
  log: (line: string) => void;
}): Promise<OpenStreamsReport> {
  const { log } = options;
  const report: OpenStreamsReport = { memory: [] };
  const HELD = 1000;
  for (const launch of options.launchers) {
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
  if (launchToolproof) {
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
      const cpuBefore = groupCpuSplit(tp.pids);
      const t0 = performance.now();
      const res = await runLoad({ pool, body, stream: true, concurrency: streams, durationMs: windowMs });
      const wallMs = performance.now() - t0;
      const loaded = await readLag(tp.origin);
      const cpuAfter = groupCpuSplit(tp.pids);
      const cpuSeconds = (cpuAfter.user + cpuAfter.sys - cpuBefore.user - cpuBefore.sys) / CLK_TCK;
      const fb = summarize(res.firstByte);
      report.eventLoop = {
        target: tp.name,
        streams,
        chunksPerStream: chunks,
        trickleMs: TRICKLE_MS,
        windowMs: wallMs,
        completed: res.count - res.errors,
        errors: res.errors,
        chunksPerSecond: ((res.count - res.errors) * chunks) / (wallMs / 1000),
        cpuCores: cpuSeconds / (wallMs / 1000),
        idle,
        loaded,
        firstByteP50Ms: fb.p50,
        firstByteP99Ms: fb.p99,
      };
      log(
        `event-loop delay in ${tp.name}, ${streams} open streams with a tool (${chunks} events each, one per ` +
          `${TRICKLE_MS} ms): p99 ${loaded.p99Ms.toFixed(1)} ms, max ${loaded.maxMs.toFixed(1)} ms ` +
          `(idle: p99 ${idle.p99Ms.toFixed(1)} ms); ${Math.round(report.eventLoop.chunksPerSecond)} events/s, ` +
          `${report.eventLoop.cpuCores.toFixed(2)} cores, first byte p99 ${fb.p99.toFixed(1)} ms, ${res.errors} errors`,
      );
    } finally {
      await pool.destroy();
      await stopChild(tp.child);
    }
  }
  return report;
}
