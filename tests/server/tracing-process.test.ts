/**
 * Tracing in the real process (server/main.ts in a child): with no OTEL_* variable,
 * nothing of OpenTelemetry is loaded and nothing is sent; with them and TOOLPROOF_WORKERS=2, each
 * worker exports its own spans, and SIGTERM's graceful shutdown flushes what was still batched.
 * Which modules load is seen through a module resolve hook that logs every @opentelemetry
 * package resolved (the run with tracing on is its positive control).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { otlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { freePort, freshRequest, hiChat, nodeEntry, stopWorkers } from '../support/toolproof-process.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** Registers a resolve hook that appends every resolved @opentelemetry URL to $TP_MODULE_LOG. */
const HOOKS = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (r.url.includes('/@opentelemetry/')) appendFileSync(process.env.TP_MODULE_LOG, r.url + '\\n');
  return r;
}`;
/**
 * The hook above sees only what ESM resolves; a CommonJS require() (prom-client requires
 * @opentelemetry/api) is seen in the require cache, logged as the process exits.
 *
 * The hook runs in a thread of its own that every resolve goes through: +0.85 s of CPU a
 * process start (1.25 -> 2.1 s). So it is registered in the process that serves and is checked:
 * the single process of the off test, and only the first worker of the on test (its positive
 * control), not the primary or the second worker, which nothing checks the modules of.
 */
const REGISTER = `import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
import cluster from 'node:cluster';
if (cluster.worker ? cluster.worker.id === 1 : process.env.TOOLPROOF_WORKERS === undefined)
  register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});
const cache = createRequire(process.cwd() + '/').cache;
process.on('exit', () => {
  for (const k of Object.keys(cache))
    if (k.includes('/@opentelemetry/')) appendFileSync(process.env.TP_MODULE_LOG, 'cjs ' + k + '\\n');
});`;

interface Proc {
  child: ChildProcess;
  output(): string;
  ready: Promise<void>;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>, readyLine: string): Proc {
  const child = spawn(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, ...nodeEntry('server/main.ts')],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in time:\n${out.slice(-2000)}`)), 60_000);
    const check = () => {
      if (out.includes(readyLine)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      check();
    });
    child.stderr!.on('data', (c: Buffer) => {
      out += c.toString();
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, ready, exited };
}

/** One streamed chat request on its own connection (the primary hands out connections). */
const chat = async (origin: string): Promise<number> =>
  (
    await freshRequest(origin, {
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      body: hiChat('m1', true),
    })
  ).status;

describe('tracing in the real process', () => {
  let sim: Simulator;
  let receiver: OtlpReceiver;
  let dir: string;

  beforeAll(async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: 'echo' });
    receiver = await otlpReceiver();
    dir = mkdtempSync(join(tmpdir(), 'tp-otel-'));
  });
  afterAll(async () => {
    await sim?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const modules = (log: string) => {
    try {
      return readFileSync(log, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };

  it('off: nothing of the OpenTelemetry SDK loaded, nothing sent, the traceparent relayed as it came', async () => {
    const port = await freePort();
    const log = join(dir, 'off.log');
    const p = start(
      {
        TOOLPROOF_HOST: '127.0.0.1',
        TOOLPROOF_PORT: String(port),
        TOOLPROOF_UPSTREAM_URL: sim.url,
        TP_MODULE_LOG: log,
      },
      'Server listening',
    );
    try {
      await p.ready;
      expect(await chat(`http://127.0.0.1:${port}`)).toBe(200);
      expect(sim.requests.at(-1)!.headers.traceparent).toBe(
        '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      );
    } finally {
      await stopWorkers(p);
    }
    // prom-client requires @opentelemetry/api (its metrics' exemplars): the API alone, with no
    // SDK registered, is a no-op. Nothing else of OpenTelemetry may load.
    const loaded = modules(log);
    expect(loaded.filter((u) => !u.includes('/@opentelemetry/api/'))).toEqual([]);
    expect(receiver.raw).toHaveLength(0);
  }, 90_000);

  it('on with two workers: each worker exports, and SIGTERM flushes what was batched', async () => {
    const port = await freePort();
    const log = join(dir, 'on.log');
    const p = start(
      {
        TOOLPROOF_WORKERS: '2',
        TOOLPROOF_HOST: '127.0.0.1',
        TOOLPROOF_PORT: String(port),
        TOOLPROOF_UPSTREAM_URL: sim.url,
        TP_MODULE_LOG: log,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.origin}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'toolproof-test',
      },
      `2 workers listening on 127.0.0.1:${port}`,
    );
    const requests = 8;
    try {
      await p.ready;
      for (let i = 0; i < requests; i++) expect(await chat(`http://127.0.0.1:${port}`)).toBe(200);
    } finally {
      p.child.kill('SIGTERM');
    }
    expect(await p.exited).toBe(0);
    const servers = receiver.spans.filter((s) => s.kind === 2);
    expect(servers).toHaveLength(requests);
    expect(servers.every((s) => s.resource['service.name'] === 'toolproof-test')).toBe(true);
    expect(new Set(servers.map((s) => s.resource['process.pid'])).size).toBe(2);
    expect(receiver.spans.filter((s) => s.kind === 3)).toHaveLength(requests);
    expect(receiver.raw.every((r) => r.path === '/v1/traces')).toBe(true);
    expect(modules(log).some((u) => u.includes('/@opentelemetry/sdk-trace-base/'))).toBe(true);
    // The require cache is read too (the off test's check sees CommonJS loads).
    expect(modules(log).some((u) => u.startsWith('cjs ') && u.includes('/@opentelemetry/'))).toBe(true);
  }, 90_000);
});
