/**
 * Capture's own share of kept CPU profiles, in the measured rounds only: reads a run of
 * `bench/tracing-ab.ts --cpu-prof` (its profile folder, with measured.json) whose sides include
 * capture-on processes, e.g.
 *
 *   npx tsx bench/tracing-ab.ts --cases=short --sides=off,offB,cap,capB \
 *     --plain="offB:;cap:TOOLPROOF_CAPTURE_MB=10;capB:TOOLPROOF_CAPTURE_MB=10" \
 *     --cpu-prof --funcs=off,offB:cap,capB
 *   npx tsx bench/capture-split.ts /tmp/tracing-prof-XXXXXX [--frames=40]
 *
 * Per side, µs per request: busy, the samples whose innermost frame of toolproof's own code is
 * capture's (server/capture/: its functions and the natives they call; the response hooks by
 * their own time only, not node's write path under them: capture-cpu.ts's rule), GC, V8's
 * (program), and the rest. With `--frames`, capture's samples by that innermost capture frame
 * (and the native under it). What capture costs the rest of the server shows as the rest's
 * difference between capture-on and capture-off processes, beside the spread of two processes
 * of one side.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: capture-split.ts PROFILE_DIR [--frames=N]');
const framesArg = process.argv.find((a) => a.startsWith('--frames'));
const topFrames = framesArg ? Number(framesArg.split('=')[1] || 40) : 0;
const m = JSON.parse(readFileSync(join(dir, 'measured.json'), 'utf8')) as {
  measured: Record<string, number>;
  windows: Array<{ from: number; to: number }>;
};
const OWN = /\/(server|policies|protocol|parsers)\//;
const names = Object.keys(m.measured);
const byFrame = new Map<string, number[]>();
for (const [si, name] of names.entries()) {
  const d = join(dir, name);
  const file = readdirSync(d).find((x) => x.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile in ${d}`);
  const p = JSON.parse(readFileSync(join(d, file), 'utf8')) as {
    nodes: Node[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  // The innermost capture frame a sample counts to (undefined: not capture's).
  const verdict = new Map<number, string | undefined>();
  const captureFrame = (leaf: number): string | undefined => {
    if (verdict.has(leaf)) return verdict.get(leaf);
    let v: string | undefined;
    for (let c: number | undefined = leaf; c !== undefined; c = parent.get(c)) {
      const f = byId.get(c)!.callFrame;
      if (!OWN.test(f.url)) continue;
      const hook = f.url.includes('recorder') && (f.functionName === 'write' || f.functionName === 'end');
      if (f.url.includes('/server/capture/') && (c === leaf || !hook)) {
        const under = c === leaf ? '' : ` > ${byId.get(leaf)!.callFrame.functionName || '(anonymous)'}`;
        v = `${f.functionName} ${f.url.replace(/^.*\/server\//, 'server/')}:${f.lineNumber + 1}${under}`;
      }
      break;
    }
    verdict.set(leaf, v);
    return v;
  };
  const n = m.measured[name]!;
  let at = p.startTime;
  let busy = 0;
  let capture = 0;
  let gc = 0;
  let program = 0;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (!m.windows.some((w) => at >= w.from && at < w.to)) continue;
    const dt = Math.max(0, p.timeDeltas[i + 1] ?? 0);
    const fn = byId.get(p.samples[i]!)!.callFrame.functionName;
    if (fn === '(idle)') continue;
    busy += dt;
    if (fn === '(garbage collector)') gc += dt;
    else if (fn === '(program)') program += dt;
    else {
      const k = captureFrame(p.samples[i]!);
      if (k === undefined) continue;
      capture += dt;
      const row = byFrame.get(k) ?? names.map(() => 0);
      row[si]! += dt / n;
      byFrame.set(k, row);
    }
  }
  const per = (x: number) => (x / n).toFixed(1).padStart(7);
  console.log(
    `${name.padEnd(8)} busy ${per(busy)}  capture ${per(capture)}  gc ${per(gc)}  program ${per(program)}  rest ${per(busy - capture - gc - program)}  (µs/request, ${n} requests)`,
  );
}
if (topFrames > 0) {
  console.log(`\ncapture's samples by innermost capture frame, µs/request (${names.join(' ')}):`);
  const sum = (r: number[]) => r.reduce((a, b) => a + b, 0);
  for (const [k, r] of [...byFrame].sort((a, b) => sum(b[1]) - sum(a[1])).slice(0, topFrames))
    console.log(`  ${r.map((x) => x.toFixed(2).padStart(6)).join(' ')}  ${k}`);
}
