/**
 * With TOOLPROOF_WORKERS > 1 each worker has its own ring: an inspector query that lands on one
 * worker is asked of every worker, through the primary (the same route the metrics take,
 * server/cluster.ts), and the answers are merged by the route. Outside a cluster, or when the
 * primary does not answer in time, the answer is this worker's alone, and says so (`partial`).
 */
import cluster, { type Worker } from 'node:cluster';
import type { CaptureRing } from './ring.js';
import { answer, type CaptureOp } from './query.js';
import { RelayBudget } from './relay-budget.js';

const ASK_TIMEOUT_MS = 3_000;
/**
 * What the primary relays of the workers' answers. Node's IPC is JSON: the primary parses and
 * writes again every byte it relays, ~25 ms of its event loop per MB on a loaded 2-core box, and
 * the primary is also where node's cluster accepts every connection. A loop of session reads
 * over full rings (each answer up to the rings' prompts, 10 MB a worker by default) held it busy
 * for up to 1.6 s at a time and every worker's new connections waited (bench/HISTORY.md,
 * redteam11). So an answer travels as JSON text in pieces of at most PIECE_CHARS (the loop turns
 * between them), and the primary relays on average at most RELAY_CHARS_PER_S past a burst of
 * RELAY_BURST_CHARS, MAX_GATHERS questions at a time: a question past either is answered `busy`
 * (the route's 429) without asking the workers. One view of two full rings' session passes.
 * Per reader (capture/relay-budget.ts): each key that reads has its own burst and an even share
 * of the rate, one question at a time, so one key's loop of reads never refuses another's; all
 * readers together owe at most RELAY_TOTAL_BURST_CHARS.
 */
const PIECE_CHARS = 256 * 1024;
const RELAY_CHARS_PER_S = 4 * 1024 * 1024;
const RELAY_BURST_CHARS = 16 * 1024 * 1024;
const RELAY_TOTAL_BURST_CHARS = 32 * 1024 * 1024;
const MAX_GATHERS = 4;
const WORKER_MARK = 'TOOLPROOF_CLUSTER_WORKER';
export const WORKER_ID = cluster.isWorker ? (cluster.worker?.id ?? 0) : 0;

interface Ask {
  tp: 'capture:ask';
  id: number;
  op: CaptureOp;
  /** Who asks (the key's name, '' without keys): the relay's budget is per reader. */
  reader: string;
}
/** A piece of one worker's answer, relayed to the asker as it arrives. */
interface Piece {
  tp: 'capture:piece';
  id: number;
  worker: number;
  text: string;
}
interface Answer {
  tp: 'capture:answer';
  id: number;
  /** The workers whose answers came whole, in the order they did (their pieces came first). */
  done: number[];
  /** Refused for the relay's budget: seconds until a question passes again. */
  busy?: number;
}
interface Collect {
  tp: 'capture:collect';
  id: number;
  op: CaptureOp;
}
interface Collected {
  tp: 'capture:collected';
  id: number;
  /** A piece of this worker's answer as JSON text (its length is what the relay's budget counts). */
  text: string;
  /** The last piece. */
  end: boolean;
}
type Message = Ask | Piece | Answer | Collect | Collected;
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
  /** The primary refused the question for its relay budget: seconds until one passes again. */
  busy?: number;
}

/** Asks every worker of the group (or only this process outside a cluster), for `reader`. */
export type AskGroup = (op: CaptureOp, reader: string) => Promise<GroupAnswer>;

/**
 * In a worker: answers the primary's collections from this worker's ring and returns the asking
 * function; outside a cluster, the local answer.
 */
export function joinCaptureGroup(ring: CaptureRing | undefined): AskGroup {
  const local = (op: CaptureOp): GroupAnswer => ({ parts: [answer(ring, op, WORKER_ID)], partial: false });
  if (!cluster.isWorker || !process.send || process.env[WORKER_MARK] !== '1') return async (op) => local(op);
  let nextId = 0;
  const waiting = new Map<number, { pieces: Map<number, string[]>; done: (a: Answer) => void }>();
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'capture:collect') {
      const text = JSON.stringify(answer(ring, message.op, WORKER_ID));
      for (let at = 0; at === 0 || at < text.length; at += PIECE_CHARS)
        process.send?.({
          tp: 'capture:collected',
          id: message.id,
          text: text.slice(at, at + PIECE_CHARS),
          end: at + PIECE_CHARS >= text.length,
        } satisfies Collected);
    } else if (message.tp === 'capture:piece') {
      const w = waiting.get(message.id);
      if (!w) return;
      const got = w.pieces.get(message.worker);
      if (got) got.push(message.text);
      else w.pieces.set(message.worker, [message.text]);
    } else if (message.tp === 'capture:answer') {
      waiting.get(message.id)?.done(message);
      waiting.delete(message.id);
    }
  });
  return (op, reader) =>
    new Promise((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        resolve({ ...local(op), partial: true });
      }, ASK_TIMEOUT_MS);
      const pieces = new Map<number, string[]>();
      waiting.set(id, {
        pieces,
        done: (a) => {
          clearTimeout(timer);
          if (a.busy !== undefined) resolve({ parts: [], partial: false, busy: a.busy });
          else
            resolve({
              parts: a.done.map((w) => JSON.parse((pieces.get(w) ?? []).join('')) as unknown),
              partial: false,
            });
        },
      });
      process.send?.({ tp: 'capture:ask', id, op, reader } satisfies Ask);
    });
}

/** In the primary: relays a worker's question to every listening worker and their answers back. */
export function serveGroupCapture(listening: () => Set<number>): void {
  let nextId = 0;
  const gathers = new Map<
    number,
    { waiting: Set<number>; done: number[]; asker: Worker; askId: number; reader: string }
  >();
  const budget = new RelayBudget({
    ratePerS: RELAY_CHARS_PER_S,
    burst: RELAY_BURST_CHARS,
    totalBurst: RELAY_TOTAL_BURST_CHARS,
    maxGathers: MAX_GATHERS,
  });
  const settle = (id: number, force = false) => {
    const g = gathers.get(id);
    if (!g || (g.waiting.size > 0 && !force)) return;
    gathers.delete(id);
    budget.done(g.reader);
    if (g.asker.isConnected())
      g.asker.send({ tp: 'capture:answer', id: g.askId, done: g.done } satisfies Answer);
  };
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.tp === 'capture:ask') {
      const reader = typeof message.reader === 'string' ? message.reader.slice(0, 256) : '';
      const busy = budget.admit(reader);
      if (busy > 0) {
        worker.send({ tp: 'capture:answer', id: message.id, done: [], busy } satisfies Answer);
        return;
      }
      const id = nextId++;
      const workers = Object.values(cluster.workers ?? {}).filter(
        (w): w is Worker => !!w && listening().has(w.id) && w.isConnected(),
      );
      gathers.set(id, {
        waiting: new Set(workers.map((w) => w.id)),
        done: [],
        asker: worker,
        askId: message.id,
        reader,
      });
      // A worker that never answers leaves the others' answers standing.
      setTimeout(() => settle(id, true), ASK_TIMEOUT_MS - 500).unref();
      for (const w of workers) w.send({ tp: 'capture:collect', id, op: message.op } satisfies Collect);
      settle(id);
    } else if (message.tp === 'capture:collected') {
      const g = gathers.get(message.id);
      if (!g?.waiting.has(worker.id)) return;
      budget.relayed(g.reader, message.text.length);
      if (g.asker.isConnected())
        g.asker.send({
          tp: 'capture:piece',
          id: g.askId,
          worker: worker.id,
          text: message.text,
        } satisfies Piece);
      if (!message.end) return;
      g.done.push(worker.id);
      g.waiting.delete(worker.id);
      settle(message.id);
    }
  });
}
