/**
 * TOOLPROOF_WORKERS > 1: one admission for the whole process group (docs/operations.md, "Several
 * workers"). The cluster primary, which only supervises and so is idle, holds the one set of
 * key limits (server/keys.ts KeyLimits) and the one admission gate per replica
 * (server/admission.ts AdmissionGate); a worker asks it for a key's slot and for a replica's slot
 * over the cluster's IPC channel and tells it when the request ends. So a key's `concurrency: 4`
 * means 4 in flight for the group, not 4 per worker (nor 4 divided by the workers: a client
 * whose connections all landed on one worker got that worker's share alone), and the fair
 * order shares the GPU's slots between keys whichever worker a request came in on: one key's
 * flood on worker 1 no longer makes another key's turn on worker 1 wait while worker 2's share
 * of the slots sits idle, nor the reverse.
 *
 * The cost is one IPC round trip per slot asked (a key's, a replica's) and one message when it
 * ends, with the decode work its response generated (one charge per 64 tokens at most, said with
 * the turn's other messages). The primary is no new point of failure: a worker whose primary goes away exits
 * (node:cluster), and a worker that dies gives back everything it held or waited for.
 */
import cluster, { type Worker } from 'node:cluster';
import { createHash } from 'node:crypto';
import { type ErrorCode, type ErrorDetail, ToolproofError } from '../protocol/errors.js';
import { type AbortLike, listenAbort, RequestAbort } from './abort.js';
import {
  AdmissionGate,
  type AdmissionHooks,
  type AdmissionOwner,
  type AdmissionSettings,
  type Gate,
  type PriorityClass,
  type Ticket,
} from './admission.js';
import type { ApiKeyEntry } from './config-keys.js';
import { type KeyEnd, type KeyLimiter, KeyLimits, type KeyRefusal } from './keys.js';

/**
 * Set in the environment of the workers the primary forks (server/cluster.ts): a process that
 * is a cluster worker of some other primary (PM2's cluster mode) has nobody to ask.
 */
export const WORKER_MARK = 'TOOLPROOF_CLUSTER_WORKER';

/** An error as it crosses the channel (a ToolproofError's fields). */
interface WireError {
  code: ErrorCode;
  message: string;
  type: string;
  detail?: ErrorDetail;
}

type ToPrimary =
  | { tp: 'adm:gate'; gate: string; settings: AdmissionSettings }
  | { tp: 'adm:enter'; id: number; gate: string; cls: PriorityClass; owner?: AdmissionOwner; bytes?: number }
  | { tp: 'adm:release'; id: number }
  /** Tokens a request holding its slot generated since its last charge (admission.ts decodeCost). */
  | { tp: 'adm:charge'; id: number; tokens: number }
  | { tp: 'adm:abort'; id: number }
  | { tp: 'adm:probed'; ask: number; slots?: number }
  | { tp: 'key:enter'; id: number; entry: ApiKeyEntry }
  | { tp: 'key:end'; id: number; sent: boolean }
  | { tp: 'key:abort'; id: number }
  | { tp: 'key:tokens'; name: string; tokens: number }
  | { tp: 'key:reload'; keys: ApiKeyEntry[] }
  /** What a worker said within one turn of its event loop, in order, as one message (GroupChannel). */
  | { tp: 'adm:batch'; ms: ToPrimary[] };

type ToWorker =
  | { tp: 'adm:queued'; id: number }
  | { tp: 'adm:admitted'; id: number; queuedMs: number }
  /** `error` absent: it left because its worker said so (its client went away). */
  | { tp: 'adm:refused'; id: number; error?: WireError }
  | { tp: 'adm:probe'; ask: number; gate: string }
  | { tp: 'key:queued'; id: number }
  | { tp: 'key:admitted'; id: number }
  | { tp: 'key:refused'; id: number; error?: WireError; reason?: KeyRefusal };

const isOurs = (m: unknown): m is { tp: string } =>
  typeof m === 'object' &&
  m !== null &&
  typeof (m as { tp?: unknown }).tp === 'string' &&
  /^(adm|key):/.test((m as { tp: string }).tp);

const toWire = (err: unknown): WireError | undefined =>
  err instanceof ToolproofError
    ? {
        code: err.code,
        message: err.message,
        type: err.type,
        ...(err.detail === undefined ? {} : { detail: err.detail }),
      }
    : undefined;

const fromWire = (w: WireError): ToolproofError =>
  new ToolproofError(w.code, {
    message: w.message,
    type: w.type,
    ...(w.detail === undefined ? {} : { detail: w.detail }),
  });

/** A request's place in the primary: leave the queue (abort), or give back what it holds (done). */
interface Place {
  /** A RequestAbort, not an AbortController: node's AbortSignal costs ~20 µs to make, twice a request. */
  abort: RequestAbort;
  /** Set once it holds its slot; `sent`: a key's request reached the upstream (KeyEnd). */
  done?: (sent: boolean) => void;
  /** A replica's slot held: its decode work charged to its owner (Ticket.charge). */
  charge?: (tokens: number) => void;
}

const FREE: Ticket = Object.freeze({ queuedMs: 0, release() {} });

/** A probe of a replica's slots that no worker answers gives up after this long. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * The primary's side: the group's key limits and gates, asked by `listening` workers. Returns
 * what the supervisor calls when a worker exits: whatever it held is given back, whatever it
 * waited for leaves its queue.
 */
export function serveGroupAdmission(): { forgetWorker(workerId: number): void } {
  const primary = groupAdmissionPrimary((id) => cluster.workers?.[id]);
  cluster.on('message', (worker: Worker, m: unknown) => primary.receive(worker, m));
  return primary;
}

/** A worker as the primary sees it (node:cluster's Worker; a test's stand-in). */
export interface WorkerPeer {
  readonly id: number;
  isConnected(): boolean;
  send(m: unknown): unknown;
}

/** The primary's side without node:cluster: what it does with a worker's message (`receive`). */
export function groupAdmissionPrimary(workerById: (id: number) => WorkerPeer | undefined): {
  receive(worker: WorkerPeer, m: unknown): void;
  forgetWorker(workerId: number): void;
} {
  const limits = new KeyLimits();
  const gates = new Map<string, AdmissionGate>();
  /** The worker that configured a gate last: the one asked to probe its replica ('auto'). */
  const prober = new Map<string, number>();
  const probes = new Map<number, (slots: number | undefined) => void>();
  let nextAsk = 0;
  /** Per worker, per request: how to give back what it holds or leave the queue it is in. */
  const held = new Map<number, Map<string, Place>>();
  const heldOf = (wid: number) => {
    let m = held.get(wid);
    if (m === undefined) held.set(wid, (m = new Map()));
    return m;
  };

  const probeVia = (gate: string): Promise<number | undefined> =>
    new Promise((resolve) => {
      const w = workerById(prober.get(gate) ?? -1);
      if (!w?.isConnected()) return resolve(undefined);
      const ask = nextAsk++;
      const timer = setTimeout(() => {
        probes.delete(ask);
        resolve(undefined);
      }, PROBE_TIMEOUT_MS);
      timer.unref();
      probes.set(ask, (slots) => {
        clearTimeout(timer);
        resolve(slots);
      });
      tell(w, { tp: 'adm:probe', ask, gate });
    });

  const handle = (worker: WorkerPeer, msg: ToPrimary): void => {
    const mine = heldOf(worker.id);
    switch (msg.tp) {
      case 'adm:batch':
        for (const one of msg.ms) handle(worker, one);
        return;
      case 'adm:gate': {
        prober.set(msg.gate, worker.id);
        const g = gates.get(msg.gate);
        if (g) g.configure(msg.settings);
        else gates.set(msg.gate, new AdmissionGate(msg.settings, { probeLimit: () => probeVia(msg.gate) }));
        return;
      }
      case 'adm:enter': {
        const gate = gates.get(msg.gate);
        const slot = `a${msg.id}`;
        if (gate === undefined) {
          // Never configured (cannot happen: a worker configures before it enters): no limit.
          tell(worker, { tp: 'adm:admitted', id: msg.id, queuedMs: 0 });
          return;
        }
        const abort = new RequestAbort();
        const place: Place = { abort };
        mine.set(slot, place);
        const admit = (t: Ticket) => {
          place.done = () => t.release();
          place.charge = (tokens) => t.charge?.(tokens);
          tell(worker, { tp: 'adm:admitted', id: msg.id, queuedMs: t.queuedMs });
        };
        const refuse = (err: unknown) => {
          mine.delete(slot);
          const error = toWire(err);
          tell(worker, { tp: 'adm:refused', id: msg.id, ...(error ? { error } : {}) });
        };
        let entered: Ticket | Promise<Ticket>;
        try {
          entered = gate.enter(msg.cls, abort, msg.owner, msg.bytes);
        } catch (err) {
          refuse(err);
          return;
        }
        if (entered instanceof Promise) {
          tell(worker, { tp: 'adm:queued', id: msg.id });
          entered.then(admit, refuse);
        } else admit(entered);
        return;
      }
      case 'key:enter': {
        const slot = `k${msg.id}`;
        const abort = new RequestAbort();
        const place: Place = { abort };
        mine.set(slot, place);
        let reason: KeyRefusal | undefined;
        const admitted = (end: KeyEnd) => {
          place.done = end;
        };
        const refuse = (err: unknown) => {
          mine.delete(slot);
          const error = toWire(err);
          tell(worker, {
            tp: 'key:refused',
            id: msg.id,
            ...(error ? { error } : {}),
            ...(reason ? { reason } : {}),
          });
        };
        let waiting: Promise<void> | undefined;
        try {
          waiting = limits.enter(msg.entry, abort, admitted, (r) => {
            reason = r;
          });
        } catch (err) {
          refuse(err);
          return;
        }
        if (waiting === undefined) tell(worker, { tp: 'key:admitted', id: msg.id });
        else {
          tell(worker, { tp: 'key:queued', id: msg.id });
          waiting.then(() => tell(worker, { tp: 'key:admitted', id: msg.id }), refuse);
        }
        return;
      }
      case 'adm:charge':
        mine.get(`a${msg.id}`)?.charge?.(msg.tokens);
        return;
      case 'adm:release':
      case 'key:end': {
        const slot = `${msg.tp === 'key:end' ? 'k' : 'a'}${msg.id}`;
        const place = mine.get(slot);
        mine.delete(slot);
        place?.done?.(msg.tp === 'key:end' ? msg.sent : true);
        return;
      }
      case 'adm:abort':
      case 'key:abort': {
        // Still waiting: it leaves the queue (the refusal that follows finds the worker done with it).
        const place = mine.get(`${msg.tp === 'key:abort' ? 'k' : 'a'}${msg.id}`);
        if (place && place.done === undefined) place.abort.abort();
        return;
      }
      case 'adm:probed': {
        const resolve = probes.get(msg.ask);
        probes.delete(msg.ask);
        resolve?.(msg.slots);
        return;
      }
      case 'key:tokens':
        limits.addTokens(msg.name, msg.tokens);
        return;
      case 'key:reload':
        limits.reloaded(msg.keys);
        return;
    }
  };

  return {
    receive(worker: WorkerPeer, m: unknown) {
      if (isOurs(m)) handle(worker, m as ToPrimary);
    },
    forgetWorker(workerId: number) {
      const mine = held.get(workerId);
      held.delete(workerId);
      if (mine === undefined) return;
      // Those waiting first, so that a slot given back below goes to another worker's request.
      for (const place of mine.values()) if (place.done === undefined) place.abort.abort();
      for (const place of mine.values()) place.done?.(true);
    },
  };
}

function tell(worker: WorkerPeer, m: ToWorker): void {
  if (worker.isConnected()) worker.send(m);
}

/** A key entry as the primary sees it: its secret as a digest (a reload compares them). */
const sentEntries = new WeakMap<ApiKeyEntry, ApiKeyEntry>();
function forPrimary(entry: ApiKeyEntry): ApiKeyEntry {
  let out = sentEntries.get(entry);
  if (out === undefined) {
    out = { ...entry, key: createHash('sha256').update(entry.key).digest('hex') };
    sentEntries.set(entry, out);
  }
  return out;
}

interface Pending {
  settle(m: ToWorker): void;
}

/**
 * The worker's side: one per process, on the channel to the primary. Each message is a write to
 * the channel and wakes the primary (a system call each side, on a loaded box the most of what
 * asking costs), so what needs no answer (a slot given back, tokens counted) waits for the end of
 * this turn of the event loop (setImmediate) and goes with whatever else was said in it, or with
 * the next question if one comes first: order is kept, and a request's two ends (its replica's
 * slot, then its key's) are one message when they fall in one turn.
 */
export class GroupChannel {
  private nextId = 0;
  readonly pending = new Map<string, Pending>();
  readonly probers = new Map<string, () => Promise<number | undefined>>();
  /** Said this turn, not sent yet. */
  private outbox: ToPrimary[] | undefined;

  constructor(private readonly send: (m: ToPrimary) => void) {}

  /** A message from the primary. */
  receive(m: unknown): void {
    if (!isOurs(m)) return;
    const msg = m as ToWorker;
    if (msg.tp === 'adm:probe') {
      const probe = this.probers.get(msg.gate);
      (probe ? probe() : Promise.resolve(undefined)).then(
        (slots) => this.ask({ tp: 'adm:probed', ask: msg.ask, ...(slots === undefined ? {} : { slots }) }),
        () => this.ask({ tp: 'adm:probed', ask: msg.ask }),
      );
      return;
    }
    this.pending.get(`${msg.tp.slice(0, 3)}${msg.id}`)?.settle(msg);
  }

  /** Sent now (with what waits in the outbox, before it). */
  ask(m: ToPrimary): void {
    if (this.outbox === undefined) this.send(m);
    else {
      this.outbox.push(m);
      this.flush();
    }
  }

  /** Sent at the end of this turn, with the rest of it. */
  later(m: ToPrimary): void {
    if (this.outbox) this.outbox.push(m);
    else {
      this.outbox = [m];
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    const ms = this.outbox;
    this.outbox = undefined;
    if (ms === undefined) return;
    this.send(ms.length === 1 ? ms[0]! : { tp: 'adm:batch', ms });
  }

  id(): number {
    return this.nextId++;
  }
}

let channel: GroupChannel | undefined;

/** The channel to the primary when this process is one of its workers; undefined otherwise. */
export function groupChannel(): GroupChannel | undefined {
  if (channel) return channel;
  if (!cluster.isWorker || !process.send || process.env[WORKER_MARK] !== '1') return undefined;
  channel = new GroupChannel((m) => process.send?.(m));
  const ch = channel;
  process.on('message', (m: unknown) => ch.receive(m));
  return ch;
}

/**
 * A replica's gate in a worker: the slot is the primary's gate's; this side only reports to the
 * worker's metrics (hooks) what happened to its own requests, so the group's sums are right.
 */
export class GroupGate implements Gate {
  private active = 0;
  private queued = 0;
  private limit: number | undefined;
  /** No `concurrency`: no limit, nothing to ask (as AdmissionGate's free ticket). */
  private open = true;

  constructor(
    private readonly ch: GroupChannel,
    private readonly name: string,
    settings: AdmissionSettings,
    private readonly hooks: AdmissionHooks,
  ) {
    if (hooks.probeLimit) ch.probers.set(name, hooks.probeLimit);
    this.configure(settings);
  }

  configure(settings: AdmissionSettings): void {
    this.limit = typeof settings.concurrency === 'number' ? settings.concurrency : undefined;
    this.open = settings.concurrency === undefined;
    this.ch.ask({ tp: 'adm:gate', gate: this.name, settings });
  }

  get load(): { active: number; queued: number; limit: number | undefined } {
    return { active: this.active, queued: this.queued, limit: this.limit };
  }

  enter(
    cls: PriorityClass,
    signal: AbortLike,
    owner?: AdmissionOwner | string,
    bytes?: number,
  ): Ticket | Promise<Ticket> {
    if (this.open) return FREE;
    if (signal.aborted) return Promise.reject(signal.reason);
    const who = typeof owner === 'string' ? { id: owner, named: true, key: owner } : owner;
    const id = this.ch.id();
    const slot = `adm${id}`;
    return new Promise<Ticket>((resolve, reject) => {
      let queued = false;
      let gone = false;
      const unqueue = () => {
        if (!queued) return;
        queued = false;
        this.queued--;
        this.hooks.queued?.(cls, -1);
      };
      const unlisten = listenAbort(signal, () => {
        gone = true;
        unqueue();
        this.ch.ask({ tp: 'adm:abort', id });
        reject(signal.reason ?? new Error('aborted'));
      });
      this.ch.pending.set(slot, {
        settle: (m) => {
          if (m.tp === 'adm:queued') {
            if (gone) return;
            queued = true;
            this.queued++;
            this.hooks.queued?.(cls, 1);
            return;
          }
          this.ch.pending.delete(slot);
          unlisten();
          if (m.tp === 'adm:refused') {
            if (gone) return;
            unqueue();
            const err = m.error ? fromWire(m.error) : new Error('aborted');
            if (m.error?.code === 'TP_ERR_QUEUE_FULL') this.hooks.shed?.(cls, 'full');
            else if (m.error?.code === 'TP_ERR_QUEUE_TIMEOUT') this.hooks.shed?.(cls, 'timeout');
            reject(err);
            return;
          }
          if (m.tp !== 'adm:admitted') return;
          // Its client left while the answer was on its way: the slot goes back at once.
          if (gone) return this.ch.later({ tp: 'adm:release', id });
          unqueue();
          this.active++;
          this.hooks.admitted?.(cls, m.queuedMs, who);
          let released = false;
          resolve({
            queuedMs: m.queuedMs,
            release: () => {
              if (released) return;
              released = true;
              this.active--;
              this.hooks.released?.(cls, who);
              this.ch.later({ tp: 'adm:release', id });
            },
            // Said with the turn's other messages, in order: before its release when both fall
            // in one turn, so the primary's next admission sees it.
            charge: (tokens) => {
              if (!released && tokens > 0) this.ch.later({ tp: 'adm:charge', id, tokens });
            },
          });
        },
      });
      this.ch.ask({
        tp: 'adm:enter',
        id,
        gate: this.name,
        cls,
        ...(who ? { owner: who } : {}),
        ...(bytes ? { bytes } : {}),
      });
    });
  }
}

/**
 * The key limits in a worker: every admission is the primary's (KeyLimits there), so a key's
 * limits hold for the group. Same contract as KeyLimits.enter, except that it always answers
 * with a promise (the primary's answer).
 */
export class GroupKeyLimits implements KeyLimiter {
  private readonly waitingNow = new Map<string, number>();
  /** Keys whose tokens the primary counts (a `tokensPerMinute`), as last presented or reloaded. */
  private readonly tokenLimited = new Set<string>();

  constructor(
    private readonly ch: GroupChannel,
    private readonly onWaiting?: (name: string, delta: 1 | -1) => void,
  ) {}

  enter(
    entry: ApiKeyEntry,
    signal: AbortLike,
    admitted: (end: KeyEnd) => void,
    refused?: (reason: KeyRefusal) => void,
  ): Promise<void> | undefined {
    if (entry.tokensPerMinute !== undefined) this.tokenLimited.add(entry.name);
    else this.tokenLimited.delete(entry.name);
    // No limit to hold: admitted here, nothing to ask (the primary would count it for nobody).
    if (
      entry.concurrency === undefined &&
      entry.requestsPerMinute === undefined &&
      entry.tokensPerMinute === undefined
    ) {
      admitted(() => {});
      return undefined;
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = this.ch.id();
    const slot = `key${id}`;
    const name = entry.name;
    return new Promise<void>((resolve, reject) => {
      let queued = false;
      let gone = false;
      const unqueue = () => {
        if (!queued) return;
        queued = false;
        this.count(name, -1);
      };
      const unlisten = listenAbort(signal, () => {
        gone = true;
        unqueue();
        this.ch.ask({ tp: 'key:abort', id });
        reject(signal.reason ?? new Error('aborted'));
      });
      this.ch.pending.set(slot, {
        settle: (m) => {
          if (m.tp === 'key:queued') {
            if (gone) return;
            queued = true;
            this.count(name, 1);
            return;
          }
          this.ch.pending.delete(slot);
          unlisten();
          if (m.tp === 'key:refused') {
            if (gone) return;
            unqueue();
            if (m.reason) refused?.(m.reason);
            reject(m.error ? fromWire(m.error) : new Error('aborted'));
            return;
          }
          if (m.tp !== 'key:admitted') return;
          // Its client left while the answer was on its way: nothing of it went upstream.
          if (gone) return this.ch.later({ tp: 'key:end', id, sent: false });
          unqueue();
          let done = false;
          admitted((sent) => {
            if (done) return;
            done = true;
            this.ch.later({ tp: 'key:end', id, sent });
          });
          resolve();
        },
      });
      this.ch.ask({ tp: 'key:enter', id, entry: forPrimary(entry) });
    });
  }

  private count(name: string, delta: 1 | -1): void {
    const n = (this.waitingNow.get(name) ?? 0) + delta;
    if (n === 0) this.waitingNow.delete(name);
    else this.waitingNow.set(name, n);
    this.onWaiting?.(name, delta);
  }

  waiting(name: string): number {
    return this.waitingNow.get(name) ?? 0;
  }

  addTokens(name: string, tokens: number): void {
    if (tokens > 0 && this.tokenLimited.has(name)) this.ch.later({ tp: 'key:tokens', name, tokens });
  }

  reloaded(keys: readonly ApiKeyEntry[]): void {
    for (const k of keys)
      if (k.tokensPerMinute !== undefined) this.tokenLimited.add(k.name);
      else this.tokenLimited.delete(k.name);
    this.ch.ask({ tp: 'key:reload', keys: keys.map(forPrimary) });
  }
}
