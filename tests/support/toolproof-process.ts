/**
 * toolproof as users run it, in a child process (`node server/main.js` of the run's transpiled
 * tree, `nodeEntry` below; `node --import tsx server/main.ts` without it), for the tests of what
 * only a real process shows: the cluster's workers, SIGHUP reloads. Every JSON log line of the
 * primary and its workers is kept, and `waitFor` waits for one that matches.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'undici';
import { afterAll, beforeAll, inject } from 'vitest';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * A port nothing holds, for a server the test starts later (a child process, `toolproof launch`).
 * It is drawn below the kernel's ephemeral range: a port `listen(0)` handed out and gave back can
 * be handed out again at once, to another test file's server in a parallel worker, and then the
 * test meets that server at "its" port (CI saw `toolproof launch` find another test's toolproof
 * and exit 0). Ports below the range are never handed out for port 0.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let tries = 0; tries < 50; tries++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await bindable(port)) return port;
  }
  throw new Error('no free port below the ephemeral range after 50 tries');
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 11_000) return low;
  } catch {
    // not Linux: 32768 is at or below the start of the usual ranges (IANA's is 49152)
  }
  return 32_768;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * One request on its own connection: a cluster's primary hands out connections, not requests, so
 * each call may reach another worker.
 */
export async function once(
  origin: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string; reqId: string }> {
  const client = new Client(origin);
  try {
    const res = await client.request({
      method: body === undefined ? 'GET' : 'POST',
      path,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: res.statusCode,
      text: await res.body.text(),
      reqId: String(res.headers['x-request-id']),
    };
  } finally {
    await client.close();
  }
}

export interface Proc {
  child: ChildProcess;
  /** Every JSON log line so far (primary and workers share stdout). */
  lines: Array<Record<string, unknown>>;
  text(): string;
  waitFor(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

export function startToolproof(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, nodeEntry('server/main.ts'), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  let pending = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
    for (const w of [...waiters]) w();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    text: () => raw,
    exited,
    waitFor(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const check = () => {
          for (; seen < lines.length; seen++) {
            if (match(lines[seen]!)) {
              cleanup();
              resolve(lines[seen]!);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no matching log line within ${timeoutMs} ms:\n${raw.slice(-3000)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/**
 * The node arguments that run `file` (a .ts of this repository, absolute or from its root): the
 * file of the run's transpiled tree when there is one (tests/setup/transpiled.ts, ~1 s of CPU
 * less a start than tsx), else the source under tsx (a config without that setup).
 */
export function nodeEntry(file: string): string[] {
  const source = isAbsolute(file) ? file : join(ROOT, file);
  const tree = inject('transpiledRoot');
  if (tree) {
    const built = join(tree, relative(ROOT, source)).replace(/\.ts$/, '.js');
    if (existsSync(built)) return [built];
  }
  return ['--import', 'tsx', source];
}

/**
 * toolproof with `TOOLPROOF_WORKERS` workers on a free port, on `config` (a YAML file; undefined:
 * the environment alone), once every worker listens.
 */
export async function startWorkers(
  config: string | undefined,
  workers = 2,
  env: Record<string, string> = {},
): Promise<{ proc: Proc; origin: string }> {
  const port = await freePort();
  const proc = startToolproof({
    ...(config !== undefined ? { TOOLPROOF_CONFIG: config } : {}),
    TOOLPROOF_WORKERS: String(workers),
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'info',
    ...env,
  });
  await proc.waitFor(
    (l) => typeof l.msg === 'string' && l.msg.includes(`${workers} workers listening`),
    60_000,
  );
  return { proc, origin: `http://127.0.0.1:${port}` };
}

/**
 * Stops a toolproof that `startWorkers` or `startToolproof` started (or any child with its
 * `exited`): SIGTERM, so the primary stops its workers gracefully, unless it already exited; its
 * exit code once it is gone. Undefined (a start that failed before it spawned): nothing to stop.
 */
export async function stopWorkers(
  proc: Pick<Proc, 'child' | 'exited'> | undefined,
): Promise<number | null | undefined> {
  if (!proc) return undefined;
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  return proc.exited;
}

/** What `clusterOnYaml` started; each field is set once the file's beforeAll ran. */
export interface YamlCluster {
  /** The YAML file toolproof reads (a test may rewrite it and send SIGHUP). */
  file: string;
  sim: Simulator;
  proc: Proc;
  origin: string;
}

/**
 * For a test file of the cluster: before its tests, a simulator on `simulator`, and toolproof with
 * two workers on the YAML that `yaml(simUrl)` writes to a temporary file; after them, both stopped.
 */
export function clusterOnYaml(simulator: SimulatorOptions, yaml: (simUrl: string) => string): YamlCluster {
  const cluster = { file: join(mkdtempSync(join(tmpdir(), 'tp-cluster-')), 'toolproof.yaml') } as YamlCluster;
  beforeAll(async () => {
    cluster.sim = await createSimulator(simulator);
    writeFileSync(cluster.file, yaml(cluster.sim.url));
    ({ proc: cluster.proc, origin: cluster.origin } = await startWorkers(cluster.file));
  }, 90_000);
  afterAll(async () => {
    await stopWorkers(cluster.proc);
    await cluster.sim?.close();
  });
  return cluster;
}

/**
 * One request on a connection of its own, read whole. A cluster's primary hands each connection to
 * a worker, so requests sent this way spread over the workers (what the cluster tests need); `key`
 * sends `Authorization: Bearer sk-<key>-0123456789`, the tests' naming of a YAML key.
 */
export async function freshRequest(
  origin: string,
  opts: {
    key?: string;
    method?: 'GET' | 'POST';
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  } = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const client = new Client(origin);
  try {
    const res = await client.request({
      method: opts.method ?? 'POST',
      path: opts.path ?? '/v1/chat/completions',
      headers: {
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(opts.key ? { authorization: `Bearer sk-${opts.key}-0123456789` } : {}),
        ...opts.headers,
      },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  } finally {
    await client.close();
  }
}

/** A one-line chat request's body for `model`, streamed or not. */
export const hiChat = (model: string, stream = false): string =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream } : {}) });
