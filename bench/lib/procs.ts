/**
 * Child processes of the bench: start them (node itself, so the pid is the server's pid), read
 * their CPU time and memory from /proc, and stop them all, also when the bench fails.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';

/** Clock ticks per second for /proc/<pid>/stat (getconf CLK_TCK; 100 almost everywhere). */
export const CLK_TCK: number = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** utime and stime of a process, in clock ticks (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuSplit(pid: number): { user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]), sys: Number(fields[12]) };
}

/** The pid and its direct children (the workers of a TOOLPROOF_WORKERS primary), from /proc. */
export function withChildren(pid: number): number[] {
  const pids = [pid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** cpuSplit summed over a process group (see withChildren); a pid that is gone counts 0. */
export function groupCpuSplit(pids: readonly number[]): { user: number; sys: number } {
  let user = 0;
  let sys = 0;
  for (const pid of pids) {
    try {
      const s = cpuSplit(pid);
      user += s.user;
      sys += s.sys;
    } catch {
      // exited
    }
  }
  return { user, sys };
}

/** VmRSS summed over a process group, MB (VmHWM summed too: an upper bound of the group's peak). */
export function groupMemoryMb(pids: readonly number[]): { rss: number; peak: number } {
  let rss = 0;
  let peak = 0;
  for (const pid of pids) {
    try {
      const m = memoryMb(pid);
      rss += m.rss;
      peak += m.peak;
    } catch {
      // exited
    }
  }
  return { rss, peak };
}

/** utime + stime of a process, in clock ticks. */
export function cpuTicks(pid: number): number {
  const { user, sys } = cpuSplit(pid);
  return user + sys;
}

/**
 * Busy CPU time of the whole machine (all cores), in clock ticks: the first line of /proc/stat
 * (user nice system idle iowait irq softirq steal ...) without idle and iowait.
 */
export function machineTicks(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  return (v[0] ?? 0) + (v[1] ?? 0) + (v[2] ?? 0) + (v[5] ?? 0) + (v[6] ?? 0) + (v[7] ?? 0);
}

/** VmRSS and VmHWM (peak RSS) in MB, from /proc/<pid>/status. */
export function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) =>
    Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** A port that was free a moment ago on 127.0.0.1 (bind to 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** The last lines it wrote on stderr (and stdout, when not parsed), for error messages. */
  output(): string;
  exited: Promise<number | null>;
}

const children = new Set<Child>();

export interface StartOptions {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Keep stdin as a pipe (a child that exits when it closes notices the parent's death). */
  stdinPipe?: boolean;
}

/** Starts `node <args>` as a child; its output is kept (last 8 KB) for error messages. */
export function startNode(options: StartOptions): Child {
  const proc = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`could not start ${options.name}`);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-8192);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const child: Child = { name: options.name, proc, pid: proc.pid, output: () => tail, exited };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

/**
 * Starts the bench's fake upstream (bench/lib/fake-upstream.ts) under `root`; resolves once it
 * listens, with its origin (http://127.0.0.1:<port>). It exits when its stdin closes.
 */
export async function startFakeUpstream(
  root: string,
): Promise<{ child: Child; port: number; origin: string }> {
  const child = startNode({
    name: 'fake upstream',
    args: ['--import', 'tsx', join(root, 'bench/lib/fake-upstream.ts')],
    cwd: root,
    stdinPipe: true,
  });
  const port = Number(await waitForLine(child, /PORT (\d+)/, 20_000));
  return { child, port, origin: `http://127.0.0.1:${port}` };
}

/** Waits for a line matching `pattern` on the child's stdout; returns the first capture group. */
export function waitForLine(child: Child, pattern: RegExp, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${child.name} did not print ${pattern} within ${timeoutMs} ms:\n${child.output()}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const m = pattern.exec(buffer);
      if (m) {
        cleanup();
        resolve(m[1] ?? m[0]);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`${child.name} exited (code ${code}) before it was ready:\n${child.output()}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.proc.stdout?.off('data', onData);
      child.proc.off('exit', onExit);
    };
    child.proc.stdout?.on('data', onData);
    child.proc.once('exit', onExit);
  });
}

/** Polls GET <url> until it answers 200 (the child must stay alive meanwhile). */
export async function waitForHttp(child: Child, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void child.exited.then((code) => {
    exitCode = code;
  });
  let lastError = '';
  while (Date.now() < deadline) {
    if (exitCode !== undefined) {
      throw new Error(`${child.name} exited (code ${exitCode}) before it was ready:\n${child.output()}`);
    }
    try {
      const res = await request(url, { headersTimeout: 1000, bodyTimeout: 1000 });
      await res.body.dump();
      if (res.statusCode === 200) return;
      lastError = `HTTP ${res.statusCode}`;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await sleep(100);
  }
  throw new Error(
    `${child.name} did not answer ${url} within ${timeoutMs} ms (${lastError}):\n${child.output()}`,
  );
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(child: Child, graceMs = 5000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Stops every child still running (in parallel). */
export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c)));
}

/** Last resort on process exit (synchronous): kill whatever is left, by pid. */
export function killAllNow(): void {
  for (const child of children) {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  }
}

/** Collections counted from a child's `--trace-gc` lines (counts hold steady where CPU times do not). */
export interface GcCounts {
  scavenge: number;
  major: number;
  /**
   * With `nvp` (startAbToolproof: `--trace-gc-nvp`): bytes allocated, bytes promoted into the old
   * generation and bytes that survived in the young one, summed over the collections (V8's own
   * counts: steady whatever the machine's load), and their pauses in milliseconds.
   */
  allocated?: number;
  promoted?: number;
  survived?: number;
  pauseMs?: number;
  /**
   * The collections' work on V8's helper threads, in milliseconds (the nvp line's `background.*`
   * fields: parallel scavenging, concurrent marking, sweeping, evacuation), beside the pauses.
   */
  backgroundMs?: number;
}

const nvpField = (line: string, name: string): number => {
  const at = line.indexOf(` ${name}=`);
  return at === -1 ? 0 : Number.parseFloat(line.slice(at + name.length + 2)) || 0;
};

/** The sum of an nvp line's `background.*=` fields (milliseconds on V8's helper threads). */
const nvpBackground = (line: string): number => {
  let sum = 0;
  for (const m of line.matchAll(/ background\.[\w.]+=([\d.]+)/g)) sum += Number.parseFloat(m[1]!) || 0;
  return sum;
};

/**
 * One side of an A/B (bench/capture-cpu.ts, bench/tracing-ab.ts): a toolproof process of its own
 * in front of `upstreamOrigin`, with none of the shell's TOOLPROOF_* or OTEL_* settings (only
 * `env`'s), `--trace-gc` counted into `gc`, `--cpu-prof` into `profDir` when given; resolves with
 * its pid and a keep-alive pool of `connections` once /health answers.
 */
export async function startAbToolproof(o: {
  label: string;
  upstreamOrigin: string;
  env: Record<string, string>;
  args: string[];
  gc: GcCounts;
  connections: number;
  profDir?: string;
  cwd: string;
  /** `--trace-gc-nvp`: also the bytes allocated, promoted and survived (GcCounts). */
  nvp?: boolean;
}): Promise<{ pid: number; pool: Pool }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('TOOLPROOF_') && !k.startsWith('OTEL_')) env[k] = v;
  Object.assign(env, {
    TOOLPROOF_UPSTREAM_URL: `${o.upstreamOrigin}/v1`,
    TOOLPROOF_HOST: '127.0.0.1',
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'warn',
    ...o.env,
  });
  const child = startNode({
    name: o.label,
    args: [
      ...(o.profDir ? ['--cpu-prof', `--cpu-prof-dir=${o.profDir}`] : []),
      o.nvp ? '--trace-gc-nvp' : '--trace-gc',
      ...o.args,
    ],
    env,
    cwd: o.cwd,
  });
  let partial = '';
  child.proc.stdout?.on('data', (d: Buffer) => {
    const lines = (partial + d.toString('latin1')).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      if (o.nvp) {
        const kind = / gc=(\w+)/.exec(l)?.[1];
        if (kind === undefined) continue;
        if (kind === 's') o.gc.scavenge++;
        else if (kind === 'mc' || kind === 'mmc') o.gc.major++;
        o.gc.allocated = (o.gc.allocated ?? 0) + nvpField(l, 'allocated');
        o.gc.promoted = (o.gc.promoted ?? 0) + nvpField(l, 'promoted');
        o.gc.survived = (o.gc.survived ?? 0) + nvpField(l, 'new_space_survived');
        o.gc.pauseMs = (o.gc.pauseMs ?? 0) + nvpField(l, 'pause');
        o.gc.backgroundMs = (o.gc.backgroundMs ?? 0) + nvpBackground(l);
      } else if (l.includes('Scavenge')) o.gc.scavenge++;
      else if (l.includes('Mark-Compact') || l.includes('Mark-sweep')) o.gc.major++;
    }
  });
  await waitForHttp(child, `http://127.0.0.1:${port}/health`, 60_000);
  return {
    pid: child.pid,
    pool: new Pool(`http://127.0.0.1:${port}`, { connections: o.connections, pipelining: 1 }),
  };
}
