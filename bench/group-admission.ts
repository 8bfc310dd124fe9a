/**
 * What the group's admission costs (server/group-admission.ts, TOOLPROOF_WORKERS > 1): two real
 * processes of 2 workers each in front of one simulator, the same requests to both, interleaved
 * in rounds. `limits`: a key with `concurrency` and admission `concurrency` (every request asks
 * the primary twice over IPC and tells it twice when it ends); `none`: the same key without
 * limits and no admission (no IPC). Measured: CPU per request of the primary and of the workers
 * (utime + stime from /proc, whole runs of `--requests`), and the median time per request at the
 * client. Sequential requests over 2 keep-alive connections (one per worker).
 *
 *   npx tsx bench/group-admission.ts [--rounds=4] [--requests=400] [--single] [--before=DIR] [--cpu-prof]
 *
 * --single adds the same two configurations in one process (TOOLPROOF_WORKERS=1), which asks
 * nobody: what the limits cost without the group. --before=DIR adds the limits side run from
 * another checkout (`git archive <commit> | tar -x -C DIR`, node_modules linked in). --cpu-prof runs every process under
 * `node --cpu-prof` and prints, per process, its busy time in the measured rounds per request by
 * area and by function (bench/lib/profile.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { createSimulator } from '../simulator/index.js';
import { summarizeProfile } from './lib/profile.js';

/** toolproof as users run it (node --import tsx server/main.ts), in a child process. */
function startToolproof(env: Record<string, string>, flags: string[] = [], cwd?: string): ChildProcess {
  return spawn(process.execPath, [...flags, '--import', 'tsx', 'server/main.ts'], {
    ...(cwd ? { cwd } : {}),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: 'ignore',
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '4' },
    requests: { type: 'string', default: '400' },
    single: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    before: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const KEY = 'sk-bench-group-000000001';
const TICK_US = 1e6 / 100; // USER_HZ

const cpuUs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
};
const sysUs = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[12]) * TICK_US;
/** Context switches (voluntary + involuntary) of a process's main thread. */
const switches = (pid: number): number => {
  const t = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return (
    Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(t)?.[1] ?? 0) +
    Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(t)?.[1] ?? 0)
  );
};

interface Side {
  name: string;
  proc: ChildProcess;
  origin: string;
  workers: number[];
  agent: Agent;
  primaryUs: number[];
  workersUs: number[];
  /** The workers' system (kernel) CPU, and their main threads' context switches, per request. */
  workersSysUs: number[];
  workersSwitches: number[];
  medianMs: number[];
  /** --cpu-prof: the profiles' folder, and the measured rounds (CLOCK_MONOTONIC µs, as V8's). */
  profDir?: string;
  windows: [number, number][];
}

async function start(name: string, yaml: string, processes = 2, cwd?: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `tp-bench-group-${name}-`));
  const file = join(dir, 'toolproof.yaml');
  writeFileSync(file, yaml);
  const port = await freePort();
  const profDir = values['cpu-prof'] ? join(dir, 'prof') : undefined;
  // The workers are forked with the primary's flags (node:cluster): each writes its own profile.
  const proc = startToolproof(
    {
      TOOLPROOF_CONFIG: file,
      TOOLPROOF_WORKERS: String(processes),
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_LOG_LEVEL: 'warn',
    },
    profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
    cwd,
  );
  const origin = `http://127.0.0.1:${port}`;
  // At warn the primary logs nothing: wait until both workers answer.
  const agent = new Agent({ connections: 2 });
  const workers = new Set<number>();
  for (let tries = 0; processes > 1 && tries < 600 && workers.size < processes; tries++) {
    const pids = childPids(proc.pid!);
    for (const p of pids) workers.add(p);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (;;) {
    try {
      const r = await fetch(`${origin}/health`, { dispatcher: agent });
      await r.arrayBuffer();
      if (r.ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  // One process: it is the worker (its CPU is the workers'; the primary's column reads 0).
  return {
    name,
    proc,
    origin,
    workers: processes > 1 ? [...workers] : [proc.pid!],
    agent,
    primaryUs: [],
    workersUs: [],
    workersSysUs: [],
    workersSwitches: [],
    medianMs: [],
    ...(profDir ? { profDir } : {}),
    windows: [],
  };
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

async function round(side: Side): Promise<void> {
  const primary = side.workers[0] === side.proc.pid ? undefined : side.proc.pid!;
  const p0 = primary === undefined ? 0 : cpuUs(primary);
  const w0 = side.workers.reduce((s, p) => s + cpuUs(p), 0);
  const sys0 = side.workers.reduce((s, p) => s + sysUs(p), 0);
  const cs0 = side.workers.reduce((s, p) => s + switches(p), 0);
  const times: number[] = [];
  const from = Number(process.hrtime.bigint() / 1000n);
  // Two at a time: each keep-alive connection (one per worker) always busy.
  const one = async () => {
    const t = performance.now();
    const r = await fetch(`${side.origin}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: side.agent,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${side.name}: status ${r.status}`);
    times.push(performance.now() - t);
  };
  for (let i = 0; i < REQUESTS; i += 2) await Promise.all([one(), one()]);
  side.windows.push([from, Number(process.hrtime.bigint() / 1000n)]);
  side.primaryUs.push(((primary === undefined ? 0 : cpuUs(primary)) - p0) / REQUESTS);
  side.workersUs.push((side.workers.reduce((s, p) => s + cpuUs(p), 0) - w0) / REQUESTS);
  side.workersSysUs.push((side.workers.reduce((s, p) => s + sysUs(p), 0) - sys0) / REQUESTS);
  side.workersSwitches.push((side.workers.reduce((s, p) => s + switches(p), 0) - cs0) / REQUESTS);
  times.sort((a, b) => a - b);
  side.medianMs.push(times[times.length >> 1]!);
}

const sim = await createSimulator({ personality: 'vllm', scenario: [{ say: 'done' }] });
const base = `defaults:\n  forceToolUse: false\nmodels:\n  m:\n    upstream: ${sim.url}\n`;
const limits = await start(
  'limits',
  `${base}admission:\n  concurrency: 8\nkeys:\n  - { name: k, key: ${KEY}, concurrency: 8, requestsPerMinute: 1000000 }\n`,
);
const none = await start('none', `${base}keys:\n  - { name: k, key: ${KEY} }\n`);
const sides = [limits, none];
// --before=DIR: the limits side again, run from another checkout (an older commit): A/B in one run.
if (values.before)
  sides.push(
    await start(
      'before',
      `${base}admission:\n  concurrency: 8\nkeys:\n  - { name: k, key: ${KEY}, concurrency: 8, requestsPerMinute: 1000000 }\n`,
      2,
      values.before,
    ),
  );
// --single: the same two configurations in one process (TOOLPROOF_WORKERS=1: no IPC at all).
if (values.single)
  sides.push(
    await start(
      'limits1',
      `${base}admission:\n  concurrency: 8\nkeys:\n  - { name: k, key: ${KEY}, concurrency: 8, requestsPerMinute: 1000000 }\n`,
      1,
    ),
    await start('none1', `${base}keys:\n  - { name: k, key: ${KEY} }\n`, 1),
  );
for (const s of sides) await round(s); // warm-up, not counted
for (const s of sides) {
  s.primaryUs.length = 0;
  s.workersUs.length = 0;
  s.workersSysUs.length = 0;
  s.workersSwitches.length = 0;
  s.medianMs.length = 0;
  s.windows.length = 0;
}
for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 === 0 ? sides : [...sides].reverse()) await round(s);

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const fmt = (xs: number[], d = 0) => `${med(xs).toFixed(d)} (${xs.map((x) => x.toFixed(d)).join(', ')})`;
for (const s of sides)
  console.log(
    `${s.name.padEnd(6)} primary µs/req ${fmt(s.primaryUs)}  workers µs/req ${fmt(s.workersUs)} (system ${fmt(s.workersSysUs)}, switches ${fmt(s.workersSwitches, 1)})  median ms/req ${fmt(s.medianMs, 2)}`,
  );
for (const s of sides) {
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await exited;
  await s.agent.close();
}
await sim.close();

// --cpu-prof: per process, the measured rounds' busy time per request, by area and by function.
for (const s of sides) {
  if (!s.profDir) continue;
  const requests = s.windows.length * REQUESTS;
  for (const f of readdirSync(s.profDir).filter((x) => x.endsWith('.cpuprofile'))) {
    const role = f.includes(`.${s.proc.pid}.`) && s.workers[0] !== s.proc.pid ? 'primary' : 'worker';
    const p = summarizeProfile(join(s.profDir, f), s.windows, 30);
    const us = (ms: number) => ((ms * 1000) / requests).toFixed(1).padStart(7);
    console.log(`\n${s.name} ${role} ${f}: busy ${us(p.busyMs)} µs/req (${p.samples} samples)`);
    for (const a of p.areas.slice(0, 12)) console.log(`  ${us(a.selfMs)}  ${a.area}`);
    console.log('  top functions by self time, µs/req:');
    for (const t of p.top) console.log(`  ${us(t.selfMs)}  ${t.frame}`);
    console.log("  toolproof's functions by inclusive time, µs/req:");
    for (const t of p.ownInclusive) console.log(`  ${us(t.selfMs)}  ${t.frame}`);
  }
}
