/**
 * What the group's admission costs (server/group-admission.ts, TOOLPROOF_WORKERS > 1): two real
 * processes of 2 workers each in front of one simulator, the same requests to both, interleaved
 * in rounds. `limits`: a key with `concurrency` and admission `concurrency` (every request asks
 * the primary twice over IPC and tells it twice when it ends); `none`: the same key without
 * limits and no admission (no IPC). Measured: CPU per request of the primary and of the workers
 * (utime + stime from /proc, whole runs of `--requests`), and the median time per request at the
 * client. Sequential requests over 2 keep-alive connections (one per worker).
 *
 *   npx tsx bench/group-admission.ts [--rounds=4] [--requests=400] [--single]
 *
 * --single adds the same two configurations in one process (TOOLPROOF_WORKERS=1), which asks
 * nobody: what the limits cost without the group.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { createSimulator } from '../simulator/index.js';

/** toolproof as users run it (node --import tsx server/main.ts), in a child process. */
function startToolproof(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
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

interface Side {
  name: string;
  proc: ChildProcess;
  origin: string;
  workers: number[];
  agent: Agent;
  primaryUs: number[];
  workersUs: number[];
  medianMs: number[];
}

async function start(name: string, yaml: string, processes = 2): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `tp-bench-group-${name}-`));
  const file = join(dir, 'toolproof.yaml');
  writeFileSync(file, yaml);
  const port = await freePort();
  const proc = startToolproof({
    TOOLPROOF_CONFIG: file,
    TOOLPROOF_WORKERS: String(processes),
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'warn',
  });
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
    medianMs: [],
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
  const times: number[] = [];
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
  side.primaryUs.push(((primary === undefined ? 0 : cpuUs(primary)) - p0) / REQUESTS);
  side.workersUs.push((side.workers.reduce((s, p) => s + cpuUs(p), 0) - w0) / REQUESTS);
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
  s.medianMs.length = 0;
}
for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 === 0 ? sides : [...sides].reverse()) await round(s);

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const fmt = (xs: number[], d = 0) => `${med(xs).toFixed(d)} (${xs.map((x) => x.toFixed(d)).join(', ')})`;
for (const s of sides)
  console.log(
    `${s.name.padEnd(6)} primary µs/req ${fmt(s.primaryUs)}  workers µs/req ${fmt(s.workersUs)}  median ms/req ${fmt(s.medianMs, 2)}`,
  );
for (const s of sides) {
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await exited;
  await s.agent.close();
}
await sim.close();
