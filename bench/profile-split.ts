/**
 * Capture's and tracing's inclusive CPU per request, read from a `bench/tracing-twin.ts --quad
 * --cpu-prof` run's profile and slices (its directory: the .cpuprofile and windows.json): each
 * sample in a side's slice is given to the outermost frame of server/capture/ or server/tracing/
 * on its stack (so what they call, Buffer's copies, Map look-ups, the id draw, is theirs), and
 * those frames are listed by µs per request of each side. Self time alone (tracing-twin's own
 * table) leaves the callees in the shared code's rows.
 *
 *   npx tsx bench/profile-split.ts DIR [--top=30] [--under=FUNCTION]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: profile-split.ts DIR');
/** --under=NAME: the self time of the frames under the outermost frames named NAME, instead. */
const under = process.argv.find((a) => a.startsWith('--under='))?.slice(8);
const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 30);
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile in ${dir}`);
const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
};
const { names, windows, measured } = JSON.parse(readFileSync(join(dir, 'windows.json'), 'utf8')) as {
  names: string[];
  windows: Array<{ side: number; from: number; to: number }>;
  measured: number[];
};
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const area = (url: string) =>
  url.includes('server/capture/') ? 'capture' : url.includes('server/tracing/') ? 'tracing' : undefined;
/** The response's write and end (CapturingResponse): node's own work under them is not capture's. */
const transparent = (n: Node) =>
  n.callFrame.url.includes('server/capture/recorder') &&
  (n.callFrame.functionName === 'write' || n.callFrame.functionName === 'end');
const label = (n: Node) => {
  const f = n.callFrame;
  const url = f.url.replace(/^.*\/\.build\//, '');
  return `${f.functionName || '(anonymous)'} ${url}:${f.lineNumber + 1}`;
};
/** Per node: the outermost capture or tracing frame above it (itself included), cached. */
const outer = new Map<number, Node | null>();
function outermost(id: number): Node | null {
  const hit = outer.get(id);
  if (hit !== undefined) return hit;
  const chain: number[] = [];
  let found: Node | null = null;
  // From the root down: the outermost capture/tracing frame below the last transparent one.
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) chain.push(at);
  for (const at of chain.reverse()) {
    const n = byId.get(at)!;
    if (transparent(n)) found = null;
    else if (area(n.callFrame.url)) found = n;
  }
  outer.set(id, found);
  return found;
}

const sorted = [...windows].sort((a, b) => a.from - b.from);
const per = names.map(() => new Map<string, number>());
const areas = names.map(() => ({ capture: 0, tracing: 0, gc: 0, busy: 0 }));
let at = p.startTime;
let w = 0;
for (let i = 0; i < p.samples.length; i++) {
  at += p.timeDeltas[i] ?? 0;
  while (w < sorted.length && sorted[w]!.to <= at) w++;
  const win = sorted[w];
  if (!win || at < win.from) continue;
  const dt = Math.max(0, p.timeDeltas[i + 1] ?? 0);
  const node = byId.get(p.samples[i]!)!;
  const name = node.callFrame.functionName;
  if (name !== '(idle)') areas[win.side]!.busy += dt;
  if (name === '(garbage collector)') areas[win.side]!.gc += dt;
  const o = outermost(node.id);
  if (!o) continue;
  const a = area(o.callFrame.url)!;
  areas[win.side]![a as 'capture' | 'tracing'] += dt;
  const key = under ? (label(o).startsWith(under) ? label(node) : '') : `${a} ${label(o)}`;
  if (key) per[win.side]!.set(key, (per[win.side]!.get(key) ?? 0) + dt);
}
const us = (side: number, v: number) => (v / measured[side]!).toFixed(2).padStart(7);
console.log(`µs per request, inclusive (outermost capture/tracing frame), by side: ${names.join(' | ')}`);
for (const k of ['busy', 'gc', 'capture', 'tracing'] as const)
  console.log(`  ${k.padEnd(8)} ${names.map((_, s) => us(s, areas[s]![k])).join(' |')}`);
const keys = new Set(per.flatMap((m) => [...m.keys()]));
const last = names.length - 1;
for (const k of [...keys].sort((a, b) => (per[last]!.get(b) ?? 0) - (per[last]!.get(a) ?? 0)).slice(0, top))
  console.log(`  ${names.map((_, s) => us(s, per[s]!.get(k) ?? 0)).join(' |')}  ${k}`);
