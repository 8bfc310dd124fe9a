/**
 * TOOLPROOF_WORKERS: N worker processes serve one port (node:cluster). The primary only
 * supervises: it forks the workers, restarts one that dies (a bounded number of times), forwards
 * SIGTERM / SIGINT and waits for every worker's graceful close, and gathers the workers' metrics
 * so that /metrics, whichever worker answers it, shows the whole group.
 *
 * Key limits and each replica's admission are the group's: the primary holds them and the workers
 * ask it (group-admission.ts), so a key's `concurrency: 4` is 4 for the group.
 * The Responses state stays in the worker that made it; a request that needs it is carried there
 * (worker-relay.ts).
 * What stays per worker: the fallback memory ("this upstream rejects tool_choice required") and
 * the upstream connection pools. A worker that has not learnt the fallback yet pays one rejected
 * round trip itself; the group's toolproof_tool_choice_fallback_active is the max over workers.
 * Without an upstream (simulator mode) every worker starts its own simulator.
 */
import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Metrics } from './metrics.js';
import { serveGroupCapture } from './capture/cluster.js';
import { serveGroupAdmission, WORKER_MARK } from './group-admission.js';
import { serveRelay } from './worker-relay.js';

/** A worker that dies is restarted at most this many times within RESTART_WINDOW_MS... */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;
/** ...and the primary gives up on a metrics gathering after this long. */
const GATHER_TIMEOUT_MS = 5_000;
/** Past the workers' own shutdown grace, the primary kills what is left. */
const KILL_MARGIN_MS = 5_000;

export { workerCount } from './config.js';

// IPC messages (worker <-> primary). Prefixed so they never collide with other cluster users.
interface AskGroup {
  tp: 'metrics:ask';
  id: number;
}
interface GroupAnswer {
  tp: 'metrics:answer';
  id: number;
  text?: string;
  error?: string;
}
interface Collect {
  tp: 'metrics:collect';
  id: number;
}
interface Collected {
  tp: 'metrics:collected';
  id: number;
  metrics?: RegistryJson;
  error?: string;
}
/**
 * A worker's toolproof server listens (announceListening). Not node:cluster's `listening` event:
 * that also fires for any other server of the worker (the built-in simulator, on a port of its
 * own, listens before toolproof does).
 */
interface Listening {
  tp: 'worker:listening';
  address: string;
  port: number;
}
/** One worker's registry as getMetricsAsJSON() returns it (the input of AggregatorRegistry.aggregate). */
type RegistryJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
type Message = AskGroup | GroupAnswer | Collect | Collected | Listening;
const isMessage = (m: unknown): m is Message =>
  typeof m === 'object' && m !== null && typeof (m as { tp?: unknown }).tp === 'string';

export interface PrimaryOptions {
  workers: number;
  /** The workers' own grace for open streams (TOOLPROOF_SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
  logLevel: string;
  /** No upstream configured: the workers serve the built-in simulator (said to the parent). */
  simulator: boolean;
}

/**
 * Forks and supervises the workers when this process is a cluster primary and more than one
 * worker is asked for; returns true then (the caller must not serve). Returns false in a worker
 * or with one worker: the caller serves as usual.
 */
export function runPrimary(options: PrimaryOptions): boolean {
  if (options.workers <= 1 || !cluster.isPrimary) return false;
  const log = primaryLogger(options.logLevel);
  const listening = new Set<number>();
  const restarts: number[] = [];
  let announced = false;
  let stopping = false;
  let exitCode = 0;

  const { forgetWorker } = serveGroupMetrics(() => listening);
  // One admission for the group: key limits and each replica's slots (group-admission.ts).
  const admission = serveGroupAdmission();
  // The inspector's queries, asked of every worker's capture ring (capture/cluster.ts).
  serveGroupCapture(() => listening);
  // Each worker's private socket, and who serves: a request reaches the worker holding its
  // Responses state (worker-relay.ts).
  const relay = serveRelay();
  const fork = () => cluster.fork({ [WORKER_MARK]: '1', ...relay.env });
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage(message) || message.tp !== 'worker:listening') return;
    listening.add(worker.id);
    relay.changed(listening);
    log(30, `worker ${worker.id} (pid ${worker.process.pid}) listening`);
    if (!announced && listening.size === options.workers) {
      announced = true;
      log(30, `${options.workers} workers listening on ${message.address}:${message.port}`, {
        workers: options.workers,
      });
      tellParent(options.simulator);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    const served = listening.delete(worker.id);
    relay.exited(worker.id);
    if (served && !stopping) relay.changed(listening);
    forgetWorker(worker.id);
    admission.forgetWorker(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
      return;
    }
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (!served) {
      // It never listened: a start-up failure (port taken, bad config file) that a restart repeats.
      log(
        50,
        `worker ${worker.id} (pid ${worker.process.pid}) exited with ${how} before listening; stopping`,
      );
      stop(1);
      return;
    }
    const now = Date.now();
    while (restarts.length > 0 && restarts[0]! <= now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length >= MAX_RESTARTS) {
      log(
        50,
        `worker ${worker.id} exited with ${how}; ${MAX_RESTARTS} restarts within ${RESTART_WINDOW_MS / 1000} s already, giving up`,
      );
      stop(1);
      return;
    }
    restarts.push(now);
    log(40, `worker ${worker.id} (pid ${worker.process.pid}) exited with ${how}; starting a new one`);
    fork();
  });

  const stop = (code: number, signal?: string) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    log(30, `${signal ?? 'stopping'}: closing ${Object.keys(cluster.workers ?? {}).length} workers`);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    const force = setTimeout(() => {
      const left = Object.values(cluster.workers ?? {});
      log(40, `${left.length} workers still running after the grace period: killing them`);
      exitCode = 1;
      for (const worker of left) worker?.process.kill('SIGKILL');
    }, options.shutdownGraceMs + KILL_MARGIN_MS);
    force.unref();
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode);
  };
  process.on('SIGTERM', () => stop(0, 'SIGTERM'));
  process.on('SIGINT', () => stop(0, 'SIGINT'));
  // A configuration reload: each worker reads the files again and swaps on its own (reload.ts).
  process.on('SIGHUP', () => {
    log(30, `SIGHUP: reloading the configuration in ${Object.keys(cluster.workers ?? {}).length} workers`);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });

  log(30, `starting ${options.workers} workers (TOOLPROOF_WORKERS)`, { workers: options.workers });
  for (let i = 0; i < options.workers; i++) fork();
  return true;
}

/**
 * The primary's side of /metrics: a worker asks, the primary collects every listening worker's
 * registry as JSON and answers with prom-client's aggregate (counters and histograms summed,
 * gauges by their `aggregator`). A scrape fails rather than show a part of the group: counters
 * that dip would read as resets.
 */
function serveGroupMetrics(listening: () => Set<number>) {
  let nextId = 0;
  const gathers = new Map<
    number,
    { waiting: Set<number>; parts: RegistryJson[]; done: (err: Error | null, text?: string) => void }
  >();
  const settle = (id: number) => {
    const g = gathers.get(id);
    if (!g || g.waiting.size > 0) return;
    gathers.delete(id);
    AggregatorRegistry.aggregate(g.parts)
      .metrics()
      .then(
        (text) => g.done(null, text),
        (err: Error) => g.done(err),
      );
  };
  const gather = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const workers = Object.values(cluster.workers ?? {}).filter(
        (w): w is Worker => !!w && listening().has(w.id) && w.isConnected(),
      );
      const timer = setTimeout(() => {
        gathers.delete(id);
        reject(new Error(`metrics: no answer from every worker within ${GATHER_TIMEOUT_MS} ms`));
      }, GATHER_TIMEOUT_MS);
      gathers.set(id, {
        waiting: new Set(workers.map((w) => w.id)),
        parts: [],
        done: (err, text) => {
          clearTimeout(timer);
          if (err) reject(err);
          else resolve(text ?? '');
        },
      });
      for (const w of workers) w.send({ tp: 'metrics:collect', id } satisfies Collect);
      settle(id);
    });

  // Scrapes share gathers: one in flight at a time, and every scrape that asks meanwhile joins
  // the next, which starts when it ends (so each answer is still collected after its scrape
  // asked). /metrics is open without a key: each scrape was a gather of its own, every worker's
  // registry as JSON held and aggregated here, so N scrapes at once held N gathers in the
  // primary's memory and loop (the loop where the cluster accepts every connection); now two.
  let running: Promise<string> | undefined;
  let next: Promise<string> | undefined;
  const shared = (): Promise<string> => {
    if (running === undefined) {
      const mine = gather();
      running = mine;
      const clear = () => {
        if (running === mine) running = undefined;
      };
      mine.then(clear, clear);
      return mine;
    }
    next ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        next = undefined;
        return shared();
      });
    return next;
  };

  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'metrics:collected') {
      const g = gathers.get(message.id);
      if (!g) return;
      if (message.error || !message.metrics) {
        gathers.delete(message.id);
        g.done(new Error(`metrics: worker ${worker.id}: ${message.error ?? 'no metrics'}`));
        return;
      }
      g.parts.push(message.metrics);
      g.waiting.delete(worker.id);
      settle(message.id);
    } else if (message.tp === 'metrics:ask') {
      shared().then(
        (text) => send(worker, { tp: 'metrics:answer', id: message.id, text }),
        (err: Error) => send(worker, { tp: 'metrics:answer', id: message.id, error: err.message }),
      );
    }
  });
  return {
    /** A worker that exits is no longer waited for (its counts leave the group's totals). */
    forgetWorker(workerId: number) {
      for (const id of [...gathers.keys()]) {
        gathers.get(id)?.waiting.delete(workerId);
        settle(id);
      }
    },
  };
}

function send(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message);
}

/** This process is a worker that runPrimary forked (not a worker of another supervisor, PM2's). */
export function inWorkerGroup(): boolean {
  return cluster.isWorker && !!process.send && process.env[WORKER_MARK] === '1';
}

/**
 * In a cluster worker: answer the primary's collections from this worker's registry, and make
 * /metrics (render()) return the group's aggregate. Does nothing outside a cluster.
 */
export function joinWorkerGroup(metrics: Metrics): void {
  if (!inWorkerGroup()) return;
  let nextId = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'metrics:collect') {
      metrics.registry.getMetricsAsJSON().then(
        (json) =>
          process.send?.({ tp: 'metrics:collected', id: message.id, metrics: json } satisfies Collected),
        (err: Error) =>
          process.send?.({ tp: 'metrics:collected', id: message.id, error: err.message } satisfies Collected),
      );
    } else if (message.tp === 'metrics:answer') {
      const w = waiting.get(message.id);
      if (!w) return;
      waiting.delete(message.id);
      if (message.text !== undefined) w.resolve(message.text);
      else w.reject(new Error(message.error ?? 'metrics: no answer from the primary'));
    }
  });
  metrics.setExposition(
    () =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error('metrics: the cluster primary did not answer'));
        }, GATHER_TIMEOUT_MS + 1_000);
        waiting.set(id, {
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
          reject: (err) => {
            clearTimeout(timer);
            reject(err);
          },
        });
        process.send?.({ tp: 'metrics:ask', id } satisfies AskGroup);
      }),
  );
}

/**
 * In a cluster worker, once toolproof's own server listens: tells the primary, which counts the
 * worker as serving (its start-up line, restarts, the group's metrics and capture). Outside a
 * cluster it tells the process that started it, if any (tellParent).
 */
export function announceListening(address: string | AddressInfo | null, simulator: boolean): void {
  if (cluster.isPrimary) tellParent(simulator);
  if (!inWorkerGroup()) return;
  if (address === null || typeof address === 'string') return;
  process.send?.({
    tp: 'worker:listening',
    address: address.address,
    port: address.port,
  } satisfies Listening);
}

/** What a serving toolproof tells the process that started it with an IPC channel. */
export interface ServingMessage {
  tp: 'toolproof:listening';
  pid: number;
  /** It serves its built-in simulator: no upstream in its environment nor in its YAML. */
  simulator: boolean;
}

/**
 * The process that started this one with an IPC channel (`toolproof launch`) is told once it
 * serves: this process's server, or all of the primary's workers, listen. Answering /health is no
 * proof: two launches at once on one port both start a server, and the other's answered while
 * this one's was still loading, to fail on the taken port a moment later.
 */
function tellParent(simulator: boolean): void {
  if (process.connected)
    process.send?.({ tp: 'toolproof:listening', pid: process.pid, simulator } satisfies ServingMessage);
}

/** pino-shaped JSON lines (level, time, pid, msg) for the primary, which has no Fastify logger. */
function primaryLogger(level: string) {
  const levels: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
  const min = levels[level] ?? 100;
  return (at: number, msg: string, extra: Record<string, unknown> = {}) => {
    if (at < min) return;
    const line = { level: at, time: Date.now(), pid: process.pid, role: 'primary', ...extra, msg };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
}
