/**
 * Admission per upstream replica (docs/operations.md): at most `limit` requests in flight on the
 * replica, and a queue in toolproof beyond it, ordered by priority class, then, within a class,
 * fairly between owners (admission-queue.ts: the owner with the fewest requests in flight on the
 * replica per unit of weight goes first; then the one served the least work, prompt and tokens
 * generated; then arrival). Without
 * it every request goes upstream at once: llama-server's slots fill and the rest wait in its
 * FIFO, vLLM preempts and evicts cached prefixes, and the main agent's turn waits behind every
 * background request that came first.
 *
 * - `reserved` slots are kept for requests above `low`: background work never fills the last
 *   ones, so an interactive turn starts at once instead of waiting for a background stream to end.
 * - The queue is bounded: a full queue sheds its newest request of the lowest class (or the
 *   arriving one, when nothing queued ranks below it) with TP_ERR_QUEUE_FULL (429). Within a
 *   class, the newest queued request of the key using the most of the replica (in flight and
 *   queued) leaves for an arriving one of a key using at least two fewer: one key's retry loop
 *   cannot keep a full queue to itself while another key's agent gets nothing but 429s.
 * - A request queued longer than `queueTimeoutMs` leaves with TP_ERR_QUEUE_TIMEOUT (503).
 * - A request whose client goes away (its abort signal) leaves the queue at once.
 * Both refusals carry a Retry-After estimated from how long requests held a slot lately.
 */
import { ToolproofError } from '../protocol/errors.js';
import { type AbortLike, RequestAbort } from './abort.js';
import { FairQueue, newOwner, type OwnerState, type QueueNode } from './admission-queue.js';

export const PRIORITY_CLASSES = ['high', 'normal', 'low', 'background'] as const;
export type PriorityClass = (typeof PRIORITY_CLASSES)[number];
/** Lower is served first (vLLM's `priority` field reads the same way). */
export const PRIORITY_RANK: Readonly<Record<PriorityClass, number>> = Object.freeze({
  high: 0,
  normal: 1,
  low: 2,
  background: 3,
});
const LOW_RANK = PRIORITY_RANK.low;

export interface AdmissionSettings {
  /** Requests in flight per replica: a number, 'auto' (asked of the backend), or none (no limit). */
  concurrency?: number | 'auto';
  /** Slots that `low` and `background` requests may not take (kept for the interactive ones). */
  reserved: number;
  /** Requests that may wait per replica; beyond it, 429. */
  queueSize: number;
  /** Longest wait in the queue; beyond it, 503. */
  queueTimeoutMs: number;
}

export const DEFAULT_ADMISSION: AdmissionSettings = Object.freeze({
  reserved: 0,
  queueSize: 256,
  queueTimeoutMs: 120_000,
});

/**
 * Who a request waits as (server/keys.ts admissionOwner): the fair order shares a replica's slots
 * between owners, and the shedding rule applies between named keys.
 */
export interface AdmissionOwner {
  /** Unique per owner: a named key's name, else the client's address (prefixed apart). */
  readonly id: string;
  /** A named key (the shedding rule's "key"). */
  readonly named: boolean;
  /** The metric label of its key (a key's name; undefined without keys). */
  readonly key?: string;
  /** Its share against other owners' (the key's `weight`; default 1). */
  readonly weight?: number;
}

/** What a gate tells the metrics (the client's upstream label is bound by the caller). */
export interface AdmissionHooks {
  queued?(cls: PriorityClass, delta: 1 | -1): void;
  admitted?(cls: PriorityClass, queuedMs: number, owner: AdmissionOwner | undefined): void;
  /** A request admitted (above) gave its slot back. */
  released?(cls: PriorityClass, owner: AdmissionOwner | undefined): void;
  shed?(cls: PriorityClass, reason: 'full' | 'timeout'): void;
  /** 'auto': reads the replica's slot count (llama-server /props total_slots); undefined: unknown. */
  probeLimit?(): Promise<number | undefined>;
}

/** A request holding a slot: release() once, when its exchange is over. */
export interface Ticket {
  readonly queuedMs: number;
  release(): void;
  /**
   * Tokens it generated since the last charge (server/decode-meter.ts), charged to its owner's
   * share while it holds the slot (decodeCost). Absent: nothing to charge (no limit).
   */
  charge?(tokens: number): void;
}

/** A replica's admission: this process's AdmissionGate, or the group's through the cluster primary (group-admission.ts). */
export interface Gate {
  /** `bytes`: the size of the request's body upstream (its prompt, tools included), its cost. */
  enter(
    cls: PriorityClass,
    signal: AbortLike,
    owner?: AdmissionOwner | string,
    bytes?: number,
  ): Ticket | Promise<Ticket>;
  configure(settings: AdmissionSettings): void;
  readonly load: { active: number; queued: number; limit: number | undefined };
}

const FREE: Ticket = Object.freeze({ queuedMs: 0, release() {} });

interface Waiter extends QueueNode {
  who: AdmissionOwner | undefined;
  /** What it costs its owner when admitted (costUnits). */
  cost: number;
  cls: PriorityClass;
  at: number;
  resolve(ticket: Ticket): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | undefined;
  signal: AbortLike;
  onAbort: () => void;
}

/**
 * A request's cost to its owner's share, from its body's size upstream: what the backend must
 * prefill (system prompt, tools, conversation), in units of 4 KiB (about a thousand tokens), at
 * least one. Prompts within one unit cost alike, so agents of similar prompts take turns as by
 * request count; an agent of 90 KB prompts is charged 23 for a turn that costs one of 2 KB 1.
 * Prefix caching makes a long prompt cheaper than its size says; its size is still what decode
 * attends over, and what a turn after a cache miss or a compaction costs.
 */
export function costUnits(bytes: number | undefined): number {
  return bytes === undefined || !(bytes > 0) ? 1 : Math.ceil(bytes / COST_UNIT_BYTES);
}
const COST_UNIT_BYTES = 4096;

/**
 * What generated tokens cost its owner's share, in the units of costUnits: 64 tokens a unit, so a
 * token decoded weighs as 16 of the prompt (about 64 bytes). A slot decodes a token in about the
 * time it prefills 20 to 100 (tens of tokens a second against thousands); the prompt's own charge
 * already overstates a prefix-cached turn. Charged as the response comes (server/upstream.ts), each
 * choice's tokens counted (`n`, `best_of`): a key whose answers run to 32k tokens is charged 500
 * units a turn, and a key asking short answers beside it goes several times in between.
 */
export function decodeCost(tokens: number): number {
  return tokens > 0 ? tokens / DECODE_TOKENS_PER_UNIT : 0;
}
const DECODE_TOKENS_PER_UNIT = 64;

/**
 * Idle owners whose virtual time is ahead of the gate's clock are remembered, so that an agent
 * sending one long turn after another keeps its charge between turns (its record goes when it has
 * nothing in flight or queued); at most this many, the oldest forgotten first.
 */
const IDLE_REMEMBERED = 1024;

/** After a failed 'auto' probe the replica runs unlimited, and is asked again after this long. */
const PROBE_RETRY_MS = 30_000;

export class AdmissionGate implements Gate {
  private settings: AdmissionSettings;
  private active = 0;
  private seq = 0;
  /**
   * The virtual clock (start-time fair queueing): the virtual time at which the last admitted
   * request started. An owner that comes (or comes back) starts there, so being idle banks no
   * credit, and an owner whose charge ran ahead of it waits until the others catch up.
   */
  private clock = 0;
  /** Idle owners' virtual times still ahead of the clock, by id, oldest first (IDLE_REMEMBERED). */
  private readonly idle = new Map<string, number>();
  private readonly queue = new FairQueue<Waiter>(PRIORITY_CLASSES.length);
  /** Per owner: requests in flight and queued on this replica (only while it has any). */
  private readonly owners = new Map<string, OwnerState>();
  /** The limit in force: the configured one, or the probed one; undefined = no limit. */
  private limit: number | undefined;
  private probing = false;
  private probedAt = -Infinity;
  /** Mean time a request held a slot (ms, exponentially weighted): the Retry-After estimate. */
  private holdMs = 1_000;

  constructor(
    settings: AdmissionSettings,
    private readonly hooks: AdmissionHooks = {},
    private readonly now: () => number = () => performance.now(),
  ) {
    this.settings = settings;
    this.limit = typeof settings.concurrency === 'number' ? settings.concurrency : undefined;
  }

  /** A reload: the new limits apply to the next admissions; queued requests stay queued. */
  configure(settings: AdmissionSettings): void {
    const was = this.settings.concurrency;
    this.settings = settings;
    if (typeof settings.concurrency === 'number') this.limit = settings.concurrency;
    else if (settings.concurrency === undefined) this.limit = undefined;
    else if (was !== 'auto') {
      this.limit = undefined;
      this.probedAt = -Infinity;
    }
    this.drain();
  }

  /** In flight and waiting now (tests, /ready). */
  get load(): { active: number; queued: number; limit: number | undefined } {
    return { active: this.active, queued: this.queue.size, limit: this.limit };
  }

  /**
   * A slot for a request of class `cls`: at once when one is free (no promise), else queued.
   * Rejects with TP_ERR_QUEUE_FULL / TP_ERR_QUEUE_TIMEOUT, or the signal's reason on abort.
   * `owner`: who it waits as (a string: a named key of that name); none: one shared owner.
   */
  enter(
    cls: PriorityClass,
    signal: AbortLike,
    owner?: AdmissionOwner | string,
    bytes?: number,
  ): Ticket | Promise<Ticket> {
    this.maybeProbe();
    const rank = PRIORITY_RANK[cls];
    if (this.settings.concurrency === undefined && this.limit === undefined) return FREE;
    const who = typeof owner === 'string' ? { id: owner, named: true, key: owner } : owner;
    // A free slot, and nobody queued who ranks with or above it (a queued low request may be
    // waiting for a slot only interactive ones may take).
    const cost = costUnits(bytes);
    if (this.queue.firstRank() > rank && this.canTake(rank))
      return this.take(cls, 0, this.ownerOf(who), who, cost);
    if (signal.aborted) return Promise.reject(signal.reason);
    let state = this.ownerOf(who);
    if (this.queue.size >= this.settings.queueSize) {
      const last = this.queue.newestOfLast();
      // The arriving request outranks the newest of the lowest class: that one leaves instead;
      // within its own class, the newest of a key using far more of the replica does.
      const tail =
        last !== undefined && last.rank > rank
          ? last
          : state.named
            ? this.queue.busiest(rank, state)
            : undefined;
      if (tail === undefined) {
        this.forget(state);
        this.hooks.shed?.(cls, 'full');
        return Promise.reject(this.refusal('TP_ERR_QUEUE_FULL'));
      }
      this.remove(tail);
      this.hooks.shed?.(tail.cls, 'full');
      tail.reject(this.refusal('TP_ERR_QUEUE_FULL'));
      // The shed one may have been all its owner had here, this newcomer's owner too: its record
      // went with it, and the newcomer must count on the one the map holds.
      state = this.ownerOf(who);
    }
    return new Promise<Ticket>((resolve, reject) => {
      const waiter: Waiter = {
        rank,
        seq: this.seq++,
        owner: state,
        who,
        cost,
        prev: undefined,
        next: undefined,
        older: undefined,
        newer: undefined,
        inQueue: false,
        cls,
        at: this.now(),
        resolve,
        reject,
        timer: undefined,
        signal,
        onAbort: () => {
          if (!this.remove(waiter)) return;
          reject(signal.reason ?? new Error('aborted'));
        },
      };
      if (this.settings.queueTimeoutMs > 0) {
        waiter.timer = setTimeout(() => {
          if (!this.remove(waiter)) return;
          this.hooks.shed?.(cls, 'timeout');
          reject(this.refusal('TP_ERR_QUEUE_TIMEOUT'));
        }, this.settings.queueTimeoutMs);
        waiter.timer.unref();
      }
      if (signal instanceof RequestAbort) signal.onAbort(waiter.onAbort);
      else signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.queue.push(waiter);
      this.hooks.queued?.(cls, 1);
    });
  }

  private canTake(rank: number): boolean {
    const limit = this.limit;
    if (limit === undefined) return this.settings.concurrency !== 'auto' || !this.probing;
    // At least one slot stays open to every class: a reservation never starves background work.
    const reserved = rank >= LOW_RANK ? Math.min(this.settings.reserved, limit - 1) : 0;
    return this.active < limit - reserved;
  }

  /** The owner's record on this replica (made on its first request; a reload's weight applies). */
  private ownerOf(who: AdmissionOwner | undefined): OwnerState {
    const id = who === undefined ? '' : who.id;
    const weight = who?.weight ?? 1;
    let o = this.owners.get(id);
    if (o === undefined) {
      const left = this.idle.get(id);
      if (left !== undefined) this.idle.delete(id);
      const served = Math.max(this.clock, left ?? 0);
      o = newOwner(id, who?.named === true, weight, PRIORITY_CLASSES.length, served);
      this.owners.set(id, o);
    } else if (o.weight !== weight) {
      o.weight = weight;
      this.queue.moved(o);
    }
    return o;
  }

  /** Drops the owner's record once nothing of it is in flight or queued here. */
  private forget(o: OwnerState): void {
    if (o.inflight !== 0 || o.queued !== 0) return;
    this.owners.delete(o.id);
    if (o.served <= this.clock) return;
    this.idle.set(o.id, o.served);
    if (this.idle.size > IDLE_REMEMBERED) this.idle.delete(this.idle.keys().next().value!);
  }

  private take(
    cls: PriorityClass,
    queuedMs: number,
    owner: OwnerState,
    who: AdmissionOwner | undefined,
    cost: number,
  ): Ticket {
    this.active++;
    owner.inflight++;
    const start = Math.max(owner.served, this.clock);
    this.clock = start;
    owner.served = start + cost / owner.weight;
    this.queue.moved(owner);
    const started = this.now();
    let released = false;
    this.hooks.admitted?.(cls, queuedMs, who);
    return {
      queuedMs,
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        owner.inflight--;
        this.queue.moved(owner);
        this.forget(owner);
        this.holdMs = this.holdMs * 0.8 + (this.now() - started) * 0.2;
        this.hooks.released?.(cls, who);
        this.drain();
      },
      charge: (tokens) => {
        if (released) return;
        const units = decodeCost(tokens);
        if (units === 0) return;
        owner.served += units / owner.weight;
        this.queue.moved(owner);
      },
    };
  }

  /** Admits queued requests, best first, while slots are free for them. */
  private drain(): void {
    for (;;) {
      const first = this.queue.first();
      if (first === undefined || !this.canTake(first.rank)) return;
      this.remove(first, true);
      first.resolve(this.take(first.cls, this.now() - first.at, first.owner, first.who, first.cost));
    }
  }

  /** Takes `w` out of the queue; `admitted`: its owner's record stays, for the slot it takes. */
  private remove(w: Waiter, admitted = false): boolean {
    if (!this.queue.remove(w)) return false;
    if (!admitted) this.forget(w.owner);
    clearTimeout(w.timer);
    if (w.signal instanceof RequestAbort) w.signal.offAbort(w.onAbort);
    else w.signal.removeEventListener('abort', w.onAbort);
    this.hooks.queued?.(w.cls, -1);
    return true;
  }

  /**
   * The seconds are in the message too: a queued stream has sent its headers (its keep-alives)
   * before it times out, so its error event is all the client gets, and it said "retry after the
   * time in the Retry-After header", a header that stream never had.
   */
  private refusal(code: 'TP_ERR_QUEUE_FULL' | 'TP_ERR_QUEUE_TIMEOUT'): ToolproofError {
    const slots = Math.max(1, this.limit ?? 1);
    const seconds = Math.min(
      60,
      Math.max(1, Math.ceil(((this.queue.size + 1) / slots) * (this.holdMs / 1000))),
    );
    const why =
      code === 'TP_ERR_QUEUE_FULL'
        ? "The model server is busy and toolproof's queue for it is full"
        : 'The model server stayed busy for longer than the queue timeout';
    return new ToolproofError(code, {
      message: `${why}; please try again in ${seconds}s.`,
      detail: { kind: 'retry-later', retryAfter: String(seconds) },
    });
  }

  private maybeProbe(): void {
    if (this.settings.concurrency !== 'auto' || this.limit !== undefined || this.probing) return;
    if (this.now() - this.probedAt < PROBE_RETRY_MS || !this.hooks.probeLimit) return;
    this.probing = true;
    this.probedAt = this.now();
    this.hooks.probeLimit().then(
      (n) => this.probed(n),
      () => this.probed(undefined),
    );
  }

  private probed(n: number | undefined): void {
    this.probing = false;
    if (this.settings.concurrency === 'auto' && n !== undefined && Number.isInteger(n) && n > 0)
      this.limit = n;
    this.drain();
  }
}
