/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and lists where the time went: the top functions by
 * self time, self time grouped by area (toolproof's own code, fastify, undici, pino, node
 * internals, GC, idle), and toolproof's own functions by inclusive time (their callees included).
 *
 * Only samples inside `windows` count when given: V8's profile timestamps and the parent's
 * process.hrtime() are both CLOCK_MONOTONIC (µs), so the bench passes the intervals of its
 * measured proxied rounds and start-up, warm-up and idle gaps drop out.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FrameTime {
  frame: string;
  area: string;
  selfMs: number;
  /** Share of the busy time (idle excluded), 0..1. */
  share: number;
}

export interface ProfileSummary {
  file: string;
  busyMs: number;
  idleMs: number;
  /** Samples kept (inside the windows). */
  samples: number;
  windowed: boolean;
  top: FrameTime[];
  /** toolproof's own functions by inclusive time (self + callees), share of busy time. */
  ownInclusive: FrameTime[];
  areas: { area: string; selfMs: number; share: number }[];
}

/** Toolproof's own top-level folders, each an area of its own in a profile's breakdown. */
export const OWN_AREAS = /\/(server|parsers|policies|protocol|cli)\//;

/** The area a profile frame's self time counts to: a package, node, V8, or one of `own`'s folders. */
export function areaOf(url: string, name: string, own: RegExp = OWN_AREAS): string {
  if (name === '(idle)') return 'idle';
  if (name === '(garbage collector)') return 'gc';
  if (name === '(program)') return 'v8 (program)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node internals';
  if (url === '') return 'native / v8';
  const mine = own.exec(url);
  if (mine) return `toolproof ${mine[1]}/`;
  return 'other';
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) return url.slice(i + 'node_modules/'.length);
  const own = /\/((?:server|parsers|policies|protocol|cli)\/.*)$/.exec(url);
  if (own) return own[1]!;
  return url.replace(/^file:\/\//, '');
}

const frameKey = (f: ProfileNode['callFrame']): string =>
  f.url
    ? `${f.functionName || '(anonymous)'} ${shortUrl(f.url)}:${f.lineNumber + 1}`
    : f.functionName || '(anonymous)';

export function summarizeProfile(
  file: string,
  windows: readonly (readonly [number, number])[] = [],
  topN = 25,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const sorted = [...windows].sort((a, b) => a[0] - b[0]);
  let w = 0;
  const inWindow = (t: number): boolean => {
    if (sorted.length === 0) return true;
    while (w < sorted.length && sorted[w]![1] < t) w++;
    return w < sorted.length && sorted[w]![0] <= t;
  };
  const selfUs = new Map<number, number>();
  let kept = 0;
  // timeDeltas[i] is the time before sample i; attribute the time until the next sample to sample i.
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (!inWindow(t)) continue;
    kept++;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
  }
  const frames = new Map<string, { area: string; us: number }>();
  const areas = new Map<string, number>();
  let idleUs = 0;
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url } = byId.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    const area = areaOf(url, name);
    if (area === 'idle') {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const key = frameKey(byId.get(id)!.callFrame);
    const entry = frames.get(key) ?? { area, us: 0 };
    entry.us += us;
    frames.set(key, entry);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  // Inclusive time of toolproof's own functions: each sample's time goes to every distinct own
  // frame on its stack (recursion counted once).
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    if (areaOf(byId.get(id)!.callFrame.url, byId.get(id)!.callFrame.functionName) === 'idle') continue;
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (!areaOf(f.url, f.functionName).startsWith('toolproof')) continue;
      const key = frameKey(f);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const ownInclusive = [...inclusive.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([frame, us]) => ({ frame, area: 'toolproof', selfMs: us / 1000, share: busyUs ? us / busyUs : 0 }));
  const top = [...frames.entries()]
    .sort((a, b) => b[1].us - a[1].us)
    .slice(0, topN)
    .map(([frame, v]) => ({ frame, area: v.area, selfMs: v.us / 1000, share: busyUs ? v.us / busyUs : 0 }));
  return {
    file,
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    samples: kept,
    windowed: sorted.length > 0,
    top,
    ownInclusive,
    areas: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, selfMs: us / 1000, share: busyUs ? us / busyUs : 0 })),
  };
}

export function formatProfile(summary: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  const lines = [
    `CPU profile of the toolproof process: ${summary.file}`,
    `${summary.windowed ? 'measured proxied rounds only' : 'whole process'}: ${summary.samples} samples, busy ${summary.busyMs.toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms`,
    '',
    'self time by area:',
    ...summary.areas.map((a) => `  ${pct(a.share)}  ${a.selfMs.toFixed(0).padStart(7)} ms  ${a.area}`),
    '',
    `top ${summary.top.length} functions by self time:`,
    ...summary.top.map((f) => `  ${pct(f.share)}  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.frame}`),
    '',
    `toolproof functions by inclusive time (with everything they call):`,
    ...summary.ownInclusive.map(
      (f) => `  ${pct(f.share)}  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.frame}`,
    ),
  ];
  return lines.join('\n');
}
