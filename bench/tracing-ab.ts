/**
 * Tracing on against tracing off, each side a toolproof process of its own (compiled, as
 * `npm start` runs it; capture off on every side, so tracing is measured alone), the bench's fake
 * upstream in another, this process the load generator and the OTLP sink (each export drained
 * unread, counted). Every side gets the same fixed number of requests, in bursts that alternate
 * (the order rotating every round); a burst's CPU is the toolproof process's own
 * (/proc/<pid>/stat). Printed per case: each side's median µs per request, the median of the
 * per-round ratios to the side "off" and their range, GCs per 1,000 requests (--trace-gc) and
 * the OTLP exports the sink received.
 *
 * Sides: `off` (no OTEL_*), `off2` (the same again: an A/A check), `on` (OTLP http/protobuf, every request sampled), `ratio`
 * (OTEL_TRACES_SAMPLER=traceidratio, OTEL_TRACES_SAMPLER_ARG=0.05), `json` (http/json, all
 * sampled); `--before=DIR` adds `before`: tracing on in another build (a copy of
 * bench/results/.build made before a change), so before and after share one run. `--env=K=V+K=V`
 * adds OTEL_* settings to every tracing side (e.g. OTEL_BSP_SCHEDULE_DELAY=1000);
 * `--variant=NAME:K=V+K=V` adds a side NAME (name it in --sides) with those settings of its own.
 *
 * `--cpu-prof`: every side under `node --cpu-prof`; each profile's busy time is divided by the
 * requests it served (warm-up included, the same count on each side), by area (GC, node
 * internals, each package), and the frames of tracing (server/tracing/, @opentelemetry/) by
 * inclusive time: figures that hold steadier on a loaded machine than a burst's CPU time.
 *
 * Processes of their own per side also show what the judged A/B's one process a variant cannot
 * say apart from luck: `--plain=NAME:K=V[;...]` adds untraced sides and `--variant=NAME:...;...`
 * traced ones (a variant named before* runs --before's build), so `--sides=off,on,offB,onB
 * --plain=offB: --variant=onB:` runs two processes of each; with `--cpu-prof`, `--funcs=off,offB:on,onB`
 * lists the frames outside tracing whose self time rose in every traced process over every
 * untraced one (`--analyze=DIR --funcs=...` reads a kept run again).
 *
 * The export without its socket: `--variant=nul:NODE_OPTIONS=--import=$PWD/bench/lib/null-export.mjs`
 * (a traced side whose POSTs node:http answers at once, no socket: bench/lib/null-export.mjs).
 * Heap figures per request come from `--trace-gc-nvp`: bytes allocated, survived and promoted,
 * the pauses, and the collections' time on V8's helper threads (concurrent marking, parallel
 * scavenging: a major collection's marking is mostly there).
 *
 *   npx tsx bench/tracing-ab.ts [--sides=off,on,ratio] [--cases=short,long,agent] [--requests=2000]
 *     [--rounds=6] [--c=32] [--before=DIR] [--env=K=V+K=V] [--cpu-prof] [--server=build|tsx]
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'undici';
import { prepareServer, type ServerMode, serverArgsAt } from './lib/build.js';
import { burst } from './lib/burst.js';
import { AGENT_TURN_EVENTS, agentTurn, toolsStreamBody } from './lib/fixtures.js';
import { median } from './lib/overhead-ab.js';
import { areaOf } from './lib/profile.js';
import { CLK_TCK, cpuSplit, startAbToolproof, startFakeUpstream, stopAll } from './lib/procs.js';
import { startOtlpSink } from './lib/otlp-sink.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const i = a.indexOf('=');
    return i < 0 ? [a.replace(/^--/, ''), ''] : [a.slice(0, i).replace(/^--/, ''), a.slice(i + 1)];
  }),
);
const REQUESTS = Number(args.get('requests') || 2000);
const ROUNDS = Number(args.get('rounds') || 6);
const C = Number(args.get('c') || 32);
const PROF = args.has('cpu-prof');
const CASES: Record<string, number> = { short: 8, long: 500, agent: AGENT_TURN_EVENTS };
const cases = (args.get('cases') || 'short,long').split(',');

const cpuUs = (pid: number) => {
  const c = cpuSplit(pid);
  return ((c.user + c.sys) / CLK_TCK) * 1e6;
};

/**
 * CPU µs of each thread group of a process: the main thread (the event loop: JavaScript, the
 * GC's own pauses) apart from the others by name (V8's workers: parallel scavenging, concurrent
 * marking and compilation; libuv's pool; the profiler), from /proc/<pid>/task/<tid>/stat.
 */
function threadCpuUs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended
    }
    const name = Number(tid) === pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // user and system time apart: page faults, madvise and socket calls are the kernel's.
    for (const [kind, field] of [
      ['user', 11],
      ['sys', 12],
    ] as const) {
      const key = `${name} ${kind}`;
      out.set(key, (out.get(key) ?? 0) + (Number(fields[field]) / CLK_TCK) * 1e6);
    }
  }
  return out;
}

async function main(): Promise<void> {
  if (args.get('analyze')) return analyze(args.get('analyze')!);
  const serverArgs = prepareServer(ROOT, (args.get('server') || 'build') as ServerMode, console.log);
  const upstream = await startFakeUpstream(ROOT);
  const profDir = mkdtempSync(join(tmpdir(), 'tracing-prof-'));
  const sink = await startOtlpSink();
  const otlp = {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  };
  const extra: Record<string, string> = {};
  for (const kv of (args.get('env') || '').split('+').filter(Boolean)) {
    const i = kv.indexOf('=');
    extra[kv.slice(0, i)] = kv.slice(i + 1);
  }
  const before = args.get('before');
  const kinds: Record<string, { env: Record<string, string>; args: string[] }> = {
    off: { env: {}, args: serverArgs },
    // A second base: the spread of two identical processes (an A/A check of the machine).
    off2: { env: {}, args: serverArgs },
    on: { env: { ...otlp, ...extra }, args: serverArgs },
    ratio: {
      env: { ...otlp, ...extra, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.05' },
      args: serverArgs,
    },
    json: { env: { ...otlp, ...extra, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, args: serverArgs },
    ...(before
      ? {
          before: {
            env: { ...otlp, ...extra },
            args: serverArgsAt(serverArgs, before),
          },
        }
      : {}),
  };
  // --variant=NAME:K=V+K=V[;NAME2:...]: one more tracing side, all sampled, with those OTEL_* settings.
  for (const variant of (args.get('variant') || '').split(';').filter(Boolean)) {
    const [name, kvs = ''] = variant.split(':');
    const env: Record<string, string> = { ...otlp, ...extra };
    for (const kv of kvs.split('+').filter(Boolean)) {
      const i = kv.indexOf('=');
      env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    // A variant named before* runs --before's build.
    kinds[name!] = { env, args: name!.startsWith('before') && kinds.before ? kinds.before.args : serverArgs };
  }
  // --plain=NAME:K=V+K=V[;NAME2:...]: one more side without tracing, with those settings (NODE_OPTIONS
  // included: e.g. a preload that exercises a part of node in an untraced process).
  for (const plain of (args.get('plain') || '').split(';').filter(Boolean)) {
    const [name, kvs = ''] = plain.split(':');
    const env: Record<string, string> = { POSTER_URL: `${sink.origin}/v1/traces`, POSTER_ROOT: ROOT };
    for (const kv of kvs.split('+').filter(Boolean)) {
      const i = kv.indexOf('=');
      env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    kinds[name!] = { env, args: serverArgs };
  }
  const names = (args.get('sides') || `off,on,ratio${before ? ',before' : ''}`).split(',');
  if (names[0] !== 'off') throw new Error('the first side is the base: off');
  const sides = names.map((name) => {
    const kind = kinds[name];
    if (!kind) throw new Error(`unknown side ${name} (${Object.keys(kinds).join(', ')})`);
    return {
      name,
      ...kind,
      pid: 0,
      pool: undefined as unknown as Pool,
      served: 0,
      measured: 0,
      dir: join(profDir, name),
      gc: { scavenge: 0, major: 0, allocated: 0, promoted: 0, survived: 0, pauseMs: 0, backgroundMs: 0 },
    };
  });
  for (const s of sides) {
    const started = await startAbToolproof({
      label: `toolproof (tracing ${s.name})`,
      upstreamOrigin: upstream.origin,
      env: { TOOLPROOF_CAPTURE_MB: '0', ...s.env },
      args: s.args,
      gc: s.gc,
      connections: C,
      nvp: true,
      ...(PROF ? { profDir: s.dir } : {}),
      cwd: ROOT,
    });
    s.pid = started.pid;
    s.pool = started.pool;
  }
  console.log(
    `sides: ${sides
      .map(
        (s) =>
          `${s.name} (${
            Object.entries(s.env)
              .filter(([k]) => k !== 'OTEL_EXPORTER_OTLP_ENDPOINT')
              .map(([k, v]) => `${k}=${v}`)
              .join(' ') || 'no OTEL_*'
          })`,
      )
      .join('; ')}`,
  );
  const windows: Array<{ from: number; to: number }> = [];
  for (const name of cases) {
    const events = CASES[name];
    if (events === undefined) throw new Error(`unknown case ${name} (short, long, agent)`);
    // agent: a real agent turn (fixtures.ts agentTurn, as npm run bench's ab-tracing sends it,
    // with its client's headers), 8 at a time, an eighth of the requests.
    const agent = name === 'agent' ? agentTurn() : undefined;
    const body = agent ? agent.body : toolsStreamBody({ chunks: events });
    const headers = agent?.headers;
    const c = agent ? Math.min(C, 8) : C;
    const n = name === 'short' ? REQUESTS : Math.max(200, Math.floor(REQUESTS / 8));
    for (let i = 0; i < 2; i++) for (const s of sides) await burst(s.pool, body, n, c, headers);
    for (const s of sides) s.served += 2 * n;
    const cpu = sides.map(() => [] as number[]);
    const threads = sides.map(() => new Map<string, number[]>());
    const gc0 = sides.map((s) => ({ ...s.gc }));
    // The profiles count the measured rounds only (V8's profile clock is the monotonic one).
    const window = { from: Number(process.hrtime.bigint() / 1000n), to: 0 };
    windows.push(window);
    const exports0 = sink.exports();
    const bytes0 = sink.bytes();
    for (let r = 0; r < ROUNDS; r++) {
      const order = sides.map((_, i) => (i + r) % sides.length);
      for (const i of order) {
        const s = sides[i]!;
        const t0 = cpuUs(s.pid);
        const th0 = threadCpuUs(s.pid);
        await burst(s.pool, body, n, c, headers);
        cpu[i]!.push((cpuUs(s.pid) - t0) / n);
        for (const [name, us] of threadCpuUs(s.pid)) {
          const list = threads[i]!.get(name) ?? [];
          list.push((us - (th0.get(name) ?? 0)) / n);
          threads[i]!.set(name, list);
        }
        s.served += n;
        s.measured += n;
      }
    }
    await new Promise((r) => setTimeout(r, 200));
    window.to = Number(process.hrtime.bigint() / 1000n);
    console.log(`${name} (${events} events, c=${c}, ${n} requests x ${ROUNDS} rounds), CPU µs per request:`);
    sides.forEach((s, i) => {
      const ratios = cpu[i]!.map((x, r) => x / cpu[0]![r]!);
      console.log(
        `  ${s.name.padEnd(7)} ${median(cpu[i]!).toFixed(0).padStart(6)} [${cpu[i]!.map((x) => x.toFixed(0)).join(' ')}]${i === 0 ? '' : `; /off: median ${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x), +${(median(cpu[i]!) - median(cpu[0]!)).toFixed(0)} µs`}; GCs per 1,000 requests: ${(((s.gc.scavenge - gc0[i]!.scavenge) * 1000) / (n * ROUNDS)).toFixed(1)} scavenges, ${(((s.gc.major - gc0[i]!.major) * 1000) / (n * ROUNDS)).toFixed(2)} major`,
      );
      // Load-independent: bytes per request (--trace-gc-nvp, summed over the GCs of the rounds).
      const per = (k: 'allocated' | 'promoted' | 'survived') =>
        ((s.gc[k]! - gc0[i]![k]!) / (n * ROUNDS) / 1024).toFixed(2);
      console.log(
        `          heap per request: ${per('allocated')} KB allocated, ${per('survived')} KB survived a scavenge, ${per('promoted')} KB promoted; GC pause ${(((s.gc.pauseMs! - gc0[i]!.pauseMs!) * 1000) / (n * ROUNDS)).toFixed(1)} µs, on V8's helper threads ${(((s.gc.backgroundMs! - gc0[i]!.backgroundMs!) * 1000) / (n * ROUNDS)).toFixed(1)} µs`,
      );
    });
    console.log(
      '  by thread (median µs per request; threads that ended during a round are missing from it):',
    );
    sides.forEach((s, i) => {
      const parts = [...threads[i]!]
        .map(([name, list]) => [name, median(list)] as const)
        .filter(([, us]) => us >= 0.5)
        .sort((a, b) => b[1] - a[1]);
      console.log(
        `    ${s.name.padEnd(7)} ${parts.map(([name, us]) => `${name} ${us.toFixed(0)}`).join(', ')}`,
      );
    });
    console.log(
      `  OTLP sink: ${sink.exports() - exports0} exports, ${((sink.bytes() - bytes0) / 1024).toFixed(0)} KB in the measured rounds`,
    );
  }
  for (const s of sides) await s.pool.close();
  const served = Object.fromEntries(sides.map((s) => [s.name, s.served]));
  const measured = Object.fromEntries(sides.map((s) => [s.name, s.measured]));
  await stopAll();
  sink.close();
  if (!PROF) return;
  writeFileSync(join(profDir, 'served.json'), JSON.stringify(served));
  writeFileSync(join(profDir, 'measured.json'), JSON.stringify({ measured, windows }));
  analyze(profDir);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** server/tracing/ apart from the rest of server/. */
const TRACING_AREAS = /\/(server\/tracing|server|parsers|policies|protocol|cli)\//;
const areaOfFrame = (url: string, name: string) => areaOf(url, name, TRACING_AREAS);

const isTracing = (url: string) => url.includes('/server/tracing/') || url.includes('@opentelemetry/');

function frameKey(f: ProfileNode['callFrame']): string {
  const i = f.url.lastIndexOf('node_modules/');
  const url = i >= 0 ? f.url.slice(i + 13) : f.url.replace(/^.*\/(server\/)/, '$1');
  return `${f.functionName || '(anonymous)'} ${url}:${f.lineNumber + 1}`;
}

/**
 * Self time by area, and tracing's frames by inclusive time, in µs per request served; with
 * `windows` (the measured rounds, monotonic µs), only the samples taken in them, per request
 * measured: start-up (the SDK's modules loaded, compiled) and warm-up left out.
 */
function summarize(file: string, served: number, windows?: ReadonlyArray<{ from: number; to: number }>) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<number, number>();
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (windows && !windows.some((w) => at >= w.from && at < w.to)) continue;
    const dt = p.timeDeltas[i + 1] ?? 0;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + Math.max(0, dt));
  }
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const selfByFrame = new Map<string, number>();
  // Tracing's share: every sample with a tracing frame on its stack (its callees included:
  // node's http client under the exporter, the GC is not on a stack and is not in it).
  let tracingUs = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const area = areaOfFrame(f.url, f.functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
    const seen = new Set<string>();
    let any = false;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      if (!isTracing(cf.url)) continue;
      any = true;
      const key = frameKey(cf);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
    if (any) tracingUs += us;
    else {
      // Self time of samples with no tracing frame on their stack (a native that tracing calls,
      // performance.now or randomFillSync, is tracing's).
      const own = frameKey(f);
      selfByFrame.set(own, (selfByFrame.get(own) ?? 0) + us);
    }
  }
  const per = (us: number) => us / served;
  return {
    areas: new Map([...areas].map(([a, us]) => [a, per(us)])),
    tracing: per(tracingUs),
    frames: [...inclusive].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, per(us)] as const),
    /** Self time by frame, of the samples without a tracing frame on their stack. */
    self: new Map([...selfByFrame].map(([k, us]) => [k, per(us)])),
  };
}

/** The profiles of a run (`--analyze=DIR` reads a kept run again). */
function analyze(profDir: string): void {
  let served = JSON.parse(readFileSync(join(profDir, 'served.json'), 'utf8')) as Record<string, number>;
  // --whole: every sample, per request served (start-up and warm-up included), as before.
  const measuredFile = join(profDir, 'measured.json');
  const m =
    !args.has('whole') && existsSync(measuredFile)
      ? (JSON.parse(readFileSync(measuredFile, 'utf8')) as {
          measured: Record<string, number>;
          windows: Array<{ from: number; to: number }>;
        })
      : undefined;
  if (m) served = m.measured;
  const names = Object.keys(served);
  const sums = names.map((name) => {
    const dir = join(profDir, name);
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile in ${dir}`);
    return summarize(join(dir, file), served[name]!, m?.windows);
  });
  console.log(
    `\nprofiles (${profDir}), self time in µs per request ${m ? 'of the measured rounds' : 'served'} (${names.map((n) => `${n} ${served[n]}`).join(', ')}):`,
  );
  const areas = new Set(sums.flatMap((s) => [...s.areas.keys()]));
  const rows = [...areas].map((a) => [a, sums.map((s) => s.areas.get(a) ?? 0)] as const);
  rows.sort((a, b) => Math.max(...b[1]) - Math.max(...a[1]));
  console.log(`  ${'area'.padEnd(34)}${names.map((n) => n.padStart(9)).join('')}`);
  for (const [a, v] of rows)
    if (Math.max(...v) >= 0.5 && a !== 'idle')
      console.log(`  ${a.padEnd(34)}${v.map((x) => x.toFixed(1).padStart(9)).join('')}`);
  const busy = sums.map((s) => [...s.areas].filter(([a]) => a !== 'idle').reduce((t, [, us]) => t + us, 0));
  console.log(`  ${'busy'.padEnd(34)}${busy.map((x) => x.toFixed(1).padStart(9)).join('')}`);
  console.log(
    `  ${'stacks with a tracing frame'.padEnd(34)}${sums.map((s) => s.tracing.toFixed(1).padStart(9)).join('')}`,
  );
  // --funcs=A,B:C,D: the frames outside tracing whose self time is higher in every side of the
  // second group than in every side of the first (processes of their own: what tracing costs
  // the code it shares with the untraced server, which a one-process twin cannot show).
  const funcs = args.get('funcs');
  if (funcs) {
    const [low, high] = funcs.split(':').map((g) => g.split(',').map((n) => names.indexOf(n)));
    if (!low || !high || [...low, ...high].some((i) => i < 0))
      throw new Error(`--funcs: sides of ${names.join(', ')}`);
    const keys = new Set(sums.flatMap((x) => [...x.self.keys()]));
    const rows = [...keys]
      .filter((k) => !isTracing(k) && !k.includes('server/tracing/') && !k.startsWith('(idle)'))
      .map((k) => {
        const lo = low.map((i) => sums[i]!.self.get(k) ?? 0);
        const hi = high.map((i) => sums[i]!.self.get(k) ?? 0);
        const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
        return { k, lo, hi, floor: Math.min(...hi) - Math.max(...lo), diff: mean(hi) - mean(lo) };
      })
      .sort((a, b) => b.floor - a.floor);
    // The other way round, as a reference: with two sides a group, a frame that tracing does not
    // touch is higher in every side of one group one time in six by chance.
    const fell = rows.filter((r) => Math.min(...r.lo) - Math.max(...r.hi) > 0);
    const rose = rows.filter((r) => r.floor > 0);
    const fmt = (v: number[]) => v.map((x) => x.toFixed(1)).join('/');
    console.log(
      `  frames outside tracing higher in every side of ${high.map((i) => names[i]).join(',')} than in every side of ${low.map((i) => names[i]).join(',')} (self µs per request; the least rise first): ${rose.length}, their mean rise ${rose.reduce((t, r) => t + r.diff, 0).toFixed(1)} µs (the other way round: ${fell.length}, ${(-fell.reduce((t, r) => t + r.diff, 0)).toFixed(1)} µs)`,
    );
    for (const r of rose.slice(0, Number(args.get('top') || 30)))
      console.log(
        `    +${r.floor.toFixed(2).padStart(5)} (mean +${r.diff.toFixed(2)})  ${r.k}  ${fmt(r.lo)} -> ${fmt(r.hi)}`,
      );
  }
  names.forEach((n, i) => {
    if (sums[i]!.frames.length === 0) return;
    console.log(`  tracing's frames, inclusive, side ${n}:`);
    for (const [k, us] of sums[i]!.frames.slice(0, Number(args.get('top') || 30)))
      console.log(`    ${us.toFixed(2).padStart(7)} µs/req  ${k}`);
  });
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
