/**
 * With TOOLPROOF_WORKERS > 1 each worker has its own ring: an inspector query that lands on one
 * worker is asked of every worker, through the primary (the same route the metrics take,
 * server/cluster.ts), and the answers are merged by the route. Outside a cluster, or when the
 * primary does not answer in time, the answer is this worker's alone, and says so (`partial`).
 */
import cluster, { type Worker } from 'node:cluster';
import type { CaptureRing } from './ring.js';
import { answer, type CaptureOp } from './query.js';

const ASK_TIMEOUT_MS = 3_000;
const WORKER_MARK = 'TOOLPROOF_CLUSTER_WORKER';
export const WORKER_ID = cluster.isWorker ? (cluster.worker?.id ?? 0) : 0;

interface Ask {
  tp: 'capture:ask';
  id: number;
  op: CaptureOp;
}
interface Answer {
  tp: 'capture:answer';
  id: number;
  parts: unknown[];
}
interface Collect {
  tp: 'capture:collect';
  id: number;
  op: CaptureOp;
}
interface Collected {
  tp: 'capture:collected';
  id: number;
  part: unknown;
}
type Message = Ask | Answer | Collect | Collected;
const isMessage = (m: unknown): m is Message =>
  typeof m === 'object' &&
  m !== null &&
  typeof (m as { tp?: unknown }).tp === 'string' &&
  (m as { tp: string }).tp.startsWith('capture:');

export interface GroupAnswer {
  /** One answer per worker that answered. */
  parts: unknown[];
  /** This worker's only: the group could not be asked (no cluster, or no answer in time). */
  partial: boolean;
}

/** Asks every worker of the group (or only this process outside a cluster). */
export type AskGroup = (op: CaptureOp) => Promise<GroupAnswer>;

/**
 * In a worker: answers the primary's collections from this worker's ring and returns the asking
 * function; outside a cluster, the local answer.
 */
export function joinCaptureGroup(ring: CaptureRing | undefined): AskGroup {
  const local = (op: CaptureOp): GroupAnswer => ({ parts: [answer(ring, op, WORKER_ID)], partial: false });
  if (!cluster.isWorker || !process.send || process.env[WORKER_MARK] !== '1') return async (op) => local(op);
  let nextId = 0;
  const waiting = new Map<number, (parts: unknown[]) => void>();
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'capture:collect')
      process.send?.({
        tp: 'capture:collected',
        id: message.id,
        part: answer(ring, message.op, WORKER_ID),
      } satisfies Collected);
    else if (message.tp === 'capture:answer') {
      waiting.get(message.id)?.(message.parts);
      waiting.delete(message.id);
    }
  });
  return (op) =>
    new Promise((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        resolve({ ...local(op), partial: true });
      }, ASK_TIMEOUT_MS);
      waiting.set(id, (parts) => {
        clearTimeout(timer);
        resolve({ parts, partial: false });
      });
      process.send?.({ tp: 'capture:ask', id, op } satisfies Ask);
    });
}

/** In the primary: relays a worker's question to every listening worker and gathers the answers. */
export function serveGroupCapture(listening: () => Set<number>): void {
  let nextId = 0;
  const gathers = new Map<number, { waiting: Set<number>; parts: unknown[]; asker: Worker; askId: number }>();
  const settle = (id: number, force = false) => {
    const g = gathers.get(id);
    if (!g || (g.waiting.size > 0 && !force)) return;
    gathers.delete(id);
    if (g.asker.isConnected())
      g.asker.send({ tp: 'capture:answer', id: g.askId, parts: g.parts } satisfies Answer);
  };
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'capture:ask') {
      const id = nextId++;
      const workers = Object.values(cluster.workers ?? {}).filter(
        (w): w is Worker => !!w && listening().has(w.id) && w.isConnected(),
      );
      gathers.set(id, {
        waiting: new Set(workers.map((w) => w.id)),
        parts: [],
        asker: worker,
        askId: message.id,
      });
      // A worker that never answers leaves the others' answers standing.
      setTimeout(() => settle(id, true), ASK_TIMEOUT_MS - 500).unref();
      for (const w of workers) w.send({ tp: 'capture:collect', id, op: message.op } satisfies Collect);
      settle(id);
    } else if (message.tp === 'capture:collected') {
      const g = gathers.get(message.id);
      if (!g) return;
      g.parts.push(message.part);
      g.waiting.delete(worker.id);
      settle(message.id);
    }
  });
}
