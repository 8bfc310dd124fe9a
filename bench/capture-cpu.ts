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
 * Cases: `short` (8-event forced tool stream), `long` (500 events), `agent` (a real agent turn:
 * Qwen Code's recorded request of ~90 KB with 14 tools and a few turns of history, its own
 * headers, answered with a 100-event streamed tool call, c=8 unless --agent-c; fixtures.ts agentTurn),
 * `paced` (the agent turn one event a write every PACED_MS, as llama-server streams: ~100 reads
 * and frames a request; --paced-requests=96 a burst, c=8).
 *
 * `--calls`: the capture sides run copies of their builds with each capture call timed (a
 * wrapper per function, bench/lib/capture-calls.ts): µs per request per call, inside the server,
 * two builds side by side (with --before) in the same run: the calls no build changed read within ~5-10% of each other across the sides.
 * `--calls=top`: only the calls a request makes are timed (no timer inside another's figure).
 * `--calls=ops`: those and the journal's ops one by one inside its flush (recorder.js's apply*
 * functions, RecordWriter.read and .event): what a flush spends on each kind of op.
 *
 * Each side's page faults per request are printed beside its collections (see minflt).
 *
 * `--mb=2,1`: more capture sides of this build with rings of those sizes (TOOLPROOF_CAPTURE_MB;
 * the `on` side keeps the default 10 MB): what a smaller ring, whose arena's write head comes
 * round to memory still in the CPU's caches sooner, saves per request.
 *
 *   npx tsx bench/capture-cpu.ts [--cases=short,long,agent,paced] [--requests=2000] [--rounds=6] [--c=32] [--cpu-prof] [--calls] [--before=DIR] [--mb=N,...]
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'undici';
import { BUILD_DIR, prepareServer, type ServerMode, serverArgsAt } from './lib/build.js';
import { readCalls, timedBuild } from './lib/capture-calls.js';
import { BENCH_HEADERS, burst } from './lib/burst.js';
import { AGENT_CALL, AGENT_TURN_EVENTS, agentTurn, PACED_MS, toolsStreamBody } from './lib/fixtures.js';
import { median } from './lib/overhead-ab.js';
import {
  CLK_TCK,
  cpuSplit,
  type GcCounts,
  startAbToolproof,
  startFakeUpstream,
  stopAll,
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
/** `--calls`: capture's calls timed one by one in the capture sides (bench/lib/capture-calls.ts). */
const CALLS = args.has('calls');
/** `--nvp`: V8's --trace-gc-nvp counts too: KB allocated, promoted and survived per request. */
const NVP = args.has('nvp');
const CASES: Record<string, number> = {
  short: 8,
  long: 500,
  agent: AGENT_TURN_EVENTS,
  paced: AGENT_TURN_EVENTS,
};
const cases = (args.get('cases') || 'short,long,agent').split(',');
/** The agent turn's concurrency (--agent-c): eight agents at work. */
const AGENT_C = Number(args.get('agent-c') || 8);

/**
 * Page faults of a process so far (/proc/<pid>/stat's minflt and majflt, summed): a fresh page's
 * first touch, ~13-14 µs of CPU each on this VM (a 1 MB buffer's pages touched in a loop). An
 * agent turn takes ~110-125 with capture off (perf: V8's large strings, the client's body decoded
 * and the body as sent flattened, and the pages a scavenge promotes into), load-independent.
 */
const minflt = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[7]) + Number(f[9]);
};

const cpuUs = (pid: number) => {
  const c = cpuSplit(pid);
  return ((c.user + c.sys) / CLK_TCK) * 1e6;
};

async function main(): Promise<void> {
  if (args.get('analyze')) return analyze(args.get('analyze')!);
  const serverArgs = prepareServer(ROOT, (args.get('server') || 'build') as ServerMode, console.log);
  const upstream = await startFakeUpstream(ROOT);
  const profDir = mkdtempSync(join(tmpdir(), 'capture-prof-'));
  // --before=DIR: a third side, capture on in another build (e.g. a copy of bench/results/.build
  // made before a change): before and after in the same run.
  const before = args.get('before');
  // --calls: the capture sides run timed copies of their builds (bench/lib/capture-calls.ts).
  const main = (dir: string) => serverArgsAt(serverArgs, dir);
  const timed = (name: string, dir: string) =>
    timedBuild(
      dir,
      join(ROOT, `bench/results/.calls-${name}`),
      args.get('calls') === 'top' || args.get('calls') === 'ops',
      args.get('calls'),
    );
  const callsEnv = (name: string): Record<string, string> =>
    CALLS ? { TP_CALLS_OUT: join(profDir, `calls-${name}`) } : {};
  const specs: Array<{ name: string; env: Record<string, string>; args: string[] }> = [
    { name: 'off', env: { TOOLPROOF_CAPTURE_MB: '0' }, args: serverArgs },
    {
      name: 'on',
      env: callsEnv('on'),
      args: CALLS ? main(timed('on', join(ROOT, BUILD_DIR))) : serverArgs,
    },
    ...(args.get('mb') || '')
      .split(',')
      .filter((mb) => mb !== '')
      .map((mb) => ({
        name: `${mb}MB`,
        env: { TOOLPROOF_CAPTURE_MB: mb, ...callsEnv(`${mb}MB`) },
        args: CALLS ? main(timed(`${mb}MB`, join(ROOT, BUILD_DIR))) : serverArgs,
      })),
    ...(before
      ? [
          {
            name: 'before',
            env: callsEnv('before'),
            args: main(CALLS ? timed('before', resolve(before)) : before),
          },
        ]
      : []),
  ];
  const sides = specs.map((s) => ({
    ...s,
    pid: 0,
    pool: undefined as unknown as Pool,
    served: 0,
    dir: join(profDir, s.name),
    gc: { scavenge: 0, major: 0 } as GcCounts,
  }));
  for (const s of sides) {
    const started = await startAbToolproof({
      label: `toolproof (capture ${s.name})`,
      upstreamOrigin: upstream.origin,
      env: s.env,
      args: s.args,
      gc: s.gc,
      connections: C,
      nvp: NVP,
      ...(PROF ? { profDir: s.dir } : {}),
      cwd: ROOT,
    });
    s.pid = started.pid;
    s.pool = started.pool;
  }
  for (const name of cases) {
    const events = CASES[name];
    if (events === undefined) throw new Error(`unknown case ${name} (short, long, agent, paced)`);
    // agent: a real agent's request (~90 KB, 14 tools, a few turns) and its recorded headers,
    // answered with a streamed tool call (fixtures.ts agentTurn).
    // paced: the same turn one event a write every PACED_MS, as llama-server streams it (npm run
    // bench's A/B workload `paced`): ~100 upstream reads a request against 1-2.
    const agent =
      name === 'agent'
        ? agentTurn(events)
        : name === 'paced'
          ? agentTurn(events, { mode: 'trickle', tickMs: PACED_MS })
          : undefined;
    const body = agent?.body ?? toolsStreamBody({ chunks: events });
    const headers = agent ? { ...agent.headers, 'content-type': 'application/json' } : BENCH_HEADERS;
    const n =
      name === 'long'
        ? Math.max(200, Math.floor(REQUESTS / 8))
        : name === 'agent'
          ? Math.max(200, Math.floor(REQUESTS / 4))
          : name === 'paced'
            ? Number(args.get('paced-requests') || 96)
            : REQUESTS;
    if (agent) await checkAgentTurn(sides[0]!.pool, body, headers);
    const c = agent ? AGENT_C : C;
    for (let i = 0; i < 2; i++) for (const s of sides) await burst(s.pool, body, n, c, headers);
    for (const s of sides) s.served += 2 * n;
    const cpu = sides.map(() => [] as number[]);
    const faults = sides.map(() => 0);
    const gc0 = sides.map((s) => ({ ...s.gc }));
    for (let r = 0; r < ROUNDS; r++) {
      const order = sides.map((_, i) => (i + r) % sides.length);
      for (const i of order) {
        const s = sides[i]!;
        const t0 = cpuUs(s.pid);
        const f0 = minflt(s.pid);
        await burst(s.pool, body, n, c, headers);
        cpu[i]!.push((cpuUs(s.pid) - t0) / n);
        faults[i]! += minflt(s.pid) - f0;
        s.served += n;
      }
    }
    // Let the last lines of --trace-gc arrive.
    await new Promise((r) => setTimeout(r, 200));
    console.log(
      `${name} (${agent ? `agent turn, ${Math.round(body.length / 1024)} KB body, ` : ''}${events} events, c=${c}, ${n} requests x ${ROUNDS} rounds), CPU µs per request:`,
    );
    sides.forEach((s, i) => {
      const ratios = cpu[i]!.map((x, r) => x / cpu[0]![r]!);
      console.log(
        `  capture ${s.name.padEnd(6)} ${median(cpu[i]!).toFixed(0).padStart(6)} [${cpu[i]!.map((x) => x.toFixed(0)).join(' ')}]${i === 0 ? '' : `; /off: median ${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x), +${(median(cpu[i]!) - median(cpu[0]!)).toFixed(0)} µs`}; GCs per 1,000 requests: ${(((s.gc.scavenge - gc0[i]!.scavenge) * 1000) / (n * ROUNDS)).toFixed(1)} scavenges, ${(((s.gc.major - gc0[i]!.major) * 1000) / (n * ROUNDS)).toFixed(2)} major; page faults per request ${(faults[i]! / (n * ROUNDS)).toFixed(2)}`,
      );
      if (NVP) {
        const g0 = gc0[i]!;
        const per = (k: 'allocated' | 'promoted' | 'survived') =>
          (((s.gc[k] ?? 0) - (g0[k] ?? 0)) / 1024 / (n * ROUNDS)).toFixed(2);
        console.log(
          `  ${''.padEnd(16)} per request: ${per('allocated')} KB allocated, ${per('promoted')} KB promoted, ${per('survived')} KB survived a scavenge; GC pauses ${((((s.gc.pauseMs ?? 0) - (g0.pauseMs ?? 0)) * 1000) / (n * ROUNDS)).toFixed(1)} µs`,
        );
      }
    });
  }
  for (const s of sides) await s.pool.close();
  const served = sides.map((s) => s.served);
  await stopAll();
  if (CALLS)
    printCalls(
      profDir,
      sides.slice(1).map((s) => s.name),
    );
  if (!PROF) return;
  writeFileSync(join(profDir, 'served.json'), JSON.stringify(served));
  writeFileSync(join(profDir, 'sides.json'), JSON.stringify(sides.map((s) => s.name)));
  analyze(profDir);
}

/** --calls: each capture side's calls, µs per captured request (warm-up included), inclusive. */
function printCalls(profDir: string, names: string[]): void {
  const read = names.map((n) => {
    const file = readdirSync(profDir).find((f) => f.startsWith(`calls-${n}-`));
    return file ? readCalls(join(profDir, file)) : undefined;
  });
  const keys = new Set<string>();
  for (const r of read) for (const k of r?.perRequest.keys() ?? []) keys.add(k);
  const first = read[0]?.perRequest;
  console.log(
    `\ncapture's calls, µs per captured request, inclusive (${names.join(' | ')}; samples over 200 µs left out: count; calls per request):`,
  );
  for (const k of [...keys].sort((a, b) => (first?.get(b) ?? 0) - (first?.get(a) ?? 0)))
    console.log(
      `  ${k.padEnd(28)} ${read
        .map(
          (r) =>
            `${(r?.perRequest.get(k) ?? 0).toFixed(2).padStart(8)} (${r?.over.get(k) ?? 0}) ${(r?.count.get(k) ?? 0).toFixed(1).padStart(6)}/req`,
        )
        .join(' | ')}`,
    );
  console.log(
    '  (begin, effects, sent, opened, read, attemptEnd, finish and the frames (RecordWriter.client) are the calls a request makes; append and charge are inside them; harnessOf and affinityKey, where a build makes them for the capture, outside)',
  );
}

/** The agent turn's answer reaches the client as a streamed call to the tool it names. */
async function checkAgentTurn(pool: Pool, body: Buffer, headers: Record<string, string>): Promise<void> {
  const r = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
  const text = await r.body.text();
  if (r.statusCode !== 200 || !text.includes(`"name":"${AGENT_CALL.name}"`) || !text.includes('data: [DONE]'))
    throw new Error(
      `agent turn: expected a streamed ${AGENT_CALL.name} call, got ${r.statusCode}: ${text.slice(0, 400)}`,
    );
}

/**
 * Capture's own CPU in a profile, per request served: the samples whose innermost frame of
 * toolproof's own code (server/, policies/, protocol/, parsers/) is one of server/capture/'s,
 * i.e. its functions and what they call outside toolproof (Buffer copies, string encoding); the
 * response hooks (recorder's write and end) by their own time only, not node's write path they
 * hand on to. GC is not in it (a profile's GC samples have no stack): see the areas.
 */
function captureOwnUs(file: string, served: number): number {
  const p = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
    samples: number[];
    timeDeltas: number[];
  };
  const parent = new Map<number, number>();
  const byId = new Map<number, (typeof p.nodes)[number]>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const own = /\/(server|policies|protocol|parsers)\//;
  const verdict = new Map<number, boolean>();
  const isCapture = (leaf: number): boolean => {
    const hit = verdict.get(leaf);
    if (hit !== undefined) return hit;
    let id: number | undefined = leaf;
    let v = false;
    while (id !== undefined) {
      const f = byId.get(id)!.callFrame;
      if (own.test(f.url)) {
        v =
          f.url.includes('server/capture/') &&
          (id === leaf ||
            !(f.url.includes('recorder') && (f.functionName === 'write' || f.functionName === 'end')));
        break;
      }
      id = parent.get(id);
    }
    verdict.set(leaf, v);
    return v;
  };
  let us = 0;
  for (let k = 0; k < p.samples.length; k++) {
    const dt = p.timeDeltas[k + 1] ?? 0;
    if (isCapture(p.samples[k]!)) us += dt;
  }
  return us / served;
}

/** The profiles of a run (`--analyze=DIR` reads a kept run again). */
function analyze(profDir: string): void {
  const served = JSON.parse(readFileSync(join(profDir, 'served.json'), 'utf8')) as number[];
  // The sides' names in the order served (--mb's sides too); a run kept from before they were written: off, on, before.
  const sidesFile = join(profDir, 'sides.json');
  const names = existsSync(sidesFile)
    ? (JSON.parse(readFileSync(sidesFile, 'utf8')) as string[])
    : ['off', 'on', 'before'].slice(0, served.length);
  const areas = new Map<string, number[]>();
  const own: string[][] = [];
  const ownUs: number[] = [];
  names.forEach((name, i) => {
    const dir = join(profDir, name);
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile in ${dir}`);
    const p = summarizeProfile(join(dir, file), [], 2000);
    const per = (ms: number) => (ms * 1000) / served[i]!;
    for (const a of [...p.areas, { area: 'busy', selfMs: p.busyMs }]) {
      const row = areas.get(a.area) ?? names.map(() => 0);
      row[i] = per(a.selfMs);
      areas.set(a.area, row);
    }
    own.push(
      p.ownInclusive
        .filter((f) => f.frame.includes('server/capture/'))
        .map((f) => `    ${per(f.selfMs).toFixed(1).padStart(7)} µs/req  ${f.frame}`),
    );
    ownUs.push(captureOwnUs(join(dir, file), served[i]!));
  });
  console.log(
    `\nprofiles (${profDir}), µs per request served (${names.map((n, i) => `${n} ${served[i]}`).join(', ')}):`,
  );
  console.log(`  ${''.padEnd(28)} ${names.map((n) => n.padStart(9)).join(' ')}   (on - off)`);
  for (const [area, row] of [...areas.entries()].sort((a, b) => b[1][1]! - a[1][1]!))
    if (Math.max(...row) >= 0.5)
      console.log(
        `  ${area.padEnd(28)} ${row.map((x) => x.toFixed(1).padStart(9)).join(' ')}   ${(row[1]! - row[0]! >= 0 ? '+' : '') + (row[1]! - row[0]!).toFixed(1)}`,
      );
  console.log(
    `  capture's own CPU (its frames and their native callees, the response hooks' own time): ${names
      .slice(1)
      .map((n, i) => `${n} ${ownUs[i + 1]!.toFixed(1)} µs/req`)
      .join(', ')}`,
  );
  names.slice(1).forEach((n, i) => {
    console.log(`  capture's frames, inclusive (a wrapper includes what it wraps), capture ${n}:`);
    console.log(own[i + 1]!.slice(0, 14).join('\n'));
  });
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
