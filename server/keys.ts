/**
 * Client keys with names and limits (docs/operations.md). The key ring is built once per
 * configuration (a reload's new one takes over at the next request: a revoked key is refused at
 * once); the limits' counters live per app and outlive reloads, by key name.
 *
 * A presented key is looked up by its SHA-256 (KeyRing): what its timing can tell is about the
 * digest of what the client sent, nothing of a key's bytes or length. Keys are never logged (the
 * logger redacts authorization headers); only their names are.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { globMatch } from '../protocol/glob.js';
import { type KeyLimitState, type KeyLimitStates, ToolproofError } from '../protocol/errors.js';
import { type AbortLike, listenAbort } from './abort.js';
import type { AdmissionOwner } from './admission.js';
import { type ApiKeyEntry, UNNAMED_KEY } from './config-keys.js';
import type { Config } from './config.js';
import type { Metrics } from './metrics.js';
import { clientAddress } from './relayed.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The metric label of requests when no key is configured. */
export const OPEN_KEY = 'none';

/**
 * The inspector's pages (docs/inspect.md) also take the key as the password of HTTP Basic
 * authentication (any user name): the one way a browser sends a credential on a plain page load
 * without a script. Only there: the API routes keep their documented headers.
 */
function acceptsBasic(request: FastifyRequest): boolean {
  const url = request.routeOptions.url;
  return url === '/inspect' || url?.startsWith('/inspect/') === true;
}

function basicPassword(encoded: string): string | undefined {
  const decoded = Buffer.from(encoded.slice(0, 4096), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/**
 * The keys by their SHA-256, looked up by the presented key's. Every request, with a key or not,
 * is matched: compared with each key in turn (timingSafeEqual over the digests), a keys file of
 * 10,000 keys cost ~0.8 ms of the event loop a request and one of 100,000 ~12 ms, for anyone who
 * can reach the port (tests/redteam/key-ring-lookup.test.ts). A lookup by digest leaks no key's
 * bytes by its timing: what it hashes and compares is the digest of what the client sent, and
 * learning whether some key's digest shares a prefix with it tells nothing of the key.
 */
export class KeyRing {
  private readonly byDigest = new Map<string, number>();
  constructor(readonly entries: readonly ApiKeyEntry[]) {
    // Keys are unique (config-keys.ts refuses a key listed twice); the first of any kept.
    entries.forEach((e, i) => {
      const d = digest(e.key).toString('base64');
      if (!this.byDigest.has(d)) this.byDigest.set(d, i);
    });
  }

  /** The entry whose key the request presents (Bearer or x-api-key); undefined: none matches. */
  match(request: FastifyRequest): ApiKeyEntry | undefined {
    const auth = request.headers.authorization;
    let presented: string | undefined;
    if (typeof auth === 'string' && auth.toLowerCase().startsWith('bearer '))
      presented = auth.slice(7).trim();
    else if (typeof auth === 'string' && auth.toLowerCase().startsWith('basic ') && acceptsBasic(request))
      presented = basicPassword(auth.slice(6).trim());
    else if (typeof request.headers['x-api-key'] === 'string') presented = request.headers['x-api-key'];
    if (!presented) return undefined;
    const found = this.byDigest.get(digest(presented).toString('base64'));
    return found === undefined ? undefined : this.entries[found];
  }
}

const rings = new WeakMap<Config, KeyRing>();

/** The configuration's key ring (null: no key needed). */
export function keyRing(config: Config): KeyRing | null {
  if (config.keys.length === 0) return null;
  let ring = rings.get(config);
  if (ring === undefined) rings.set(config, (ring = new KeyRing(config.keys)));
  return ring;
}

/** May this key use this model? (Its allow-list's globs; no list: every model.) */
export function allowsModel(entry: ApiKeyEntry | undefined, model: string): boolean {
  const list = entry?.models;
  if (list === undefined) return true;
  const name = model.slice(0, 256);
  return list.some((pattern) => globMatch(pattern, name));
}

/** 403 in the API's shape (the door's error handler frames it). */
export function forbiddenModel(entry: ApiKeyEntry, model: string): ToolproofError {
  return new ToolproofError('TP_ERR_MODEL_FORBIDDEN', {
    param: 'model',
    message: `The API key "${entry.name}" may not use the model "${model.slice(0, 256)}".`,
  });
}

/**
 * A sliding minute in one-second buckets: what was counted in the last 60 s, and how long until
 * that falls below a limit. Fixed memory (122 numbers) whatever the traffic. The window holds the
 * current second and the 60 before it: a request counted late in second 0 is still 60 s old at
 * the start of second 60 (with only 60 buckets it had left, and a limit of 30 a minute let 32
 * through in 60 s).
 */
const BUCKETS = 61;

class MinuteWindow {
  private readonly counts = new Float64Array(BUCKETS);
  private readonly seconds = new Float64Array(BUCKETS).fill(-1);

  /** Takes back `n` counted in second `sec`, if that second is still in the window. */
  remove(n: number, sec: number): void {
    const i = sec % BUCKETS;
    if (this.seconds[i] === sec) this.counts[i] = Math.max(0, this.counts[i]! - n);
  }

  add(n: number, nowSec: number): void {
    const i = nowSec % BUCKETS;
    if (this.seconds[i] !== nowSec) {
      this.seconds[i] = nowSec;
      this.counts[i] = 0;
    }
    this.counts[i]! += n;
  }

  sum(nowSec: number): number {
    let total = 0;
    for (let i = 0; i < BUCKETS; i++) if (this.seconds[i]! > nowSec - BUCKETS) total += this.counts[i]!;
    return total;
  }

  /** Seconds until the window's sum is below `limit` (at least 1). */
  secondsUntilBelow(limit: number, nowSec: number): number {
    let total = this.sum(nowSec);
    for (let ahead = 1; ahead <= BUCKETS; ahead++) {
      // The bucket of second (now - 61 + ahead) leaves the window `ahead` seconds from now.
      const leaving = nowSec - BUCKETS + ahead;
      const i = ((leaving % BUCKETS) + BUCKETS) % BUCKETS;
      if (this.seconds[i] === leaving) total -= this.counts[i]!;
      if (total < limit) return ahead;
    }
    return BUCKETS;
  }

  /** Seconds until nothing counted now is left in the window (0: nothing is). */
  secondsUntilEmpty(nowSec: number): number {
    let newest = -1;
    for (let i = 0; i < BUCKETS; i++)
      if (this.seconds[i]! > nowSec - BUCKETS && this.counts[i]! > 0)
        newest = Math.max(newest, this.seconds[i]!);
    return newest < 0 ? 0 : newest + BUCKETS - nowSec;
  }
}

/**
 * The Retry-After of a per-minute limit: when the window falls below it, at most 60 s. A request
 * counted in this very second leaves the window 61 s from its second's start (MinuteWindow), but
 * the openai SDK ignores a Retry-After over 60 s and retries on its own backoff (0.5 s, 1 s): into
 * the same 429, and the call failed within 1.5 s. Sent again after 60 s, a request finds at most
 * one more 429 saying 1.
 */
const MAX_RETRY_AFTER_S = 60;
function untilBelow(w: MinuteWindow, limit: number, nowSec: number): number {
  return Math.min(MAX_RETRY_AFTER_S, w.secondsUntilBelow(limit, nowSec));
}

/** A request waiting for one of its key's concurrency slots (KeyLimits.enter). */
interface KeyWaiter {
  entry: ApiKeyEntry;
  admitted: (end: KeyEnd) => void;
  refused: ((reason: KeyRefusal) => void) | undefined;
  resolve(): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
  unlisten: () => void;
}

interface KeyState {
  inflight: number;
  requests: MinuteWindow;
  tokens: MinuteWindow;
  /** Requests waiting for a concurrency slot, first come first served (bounded by queueSize). */
  waiting: KeyWaiter[];
  /** The key's entry as the latest request presented it: a reload's limits, for those waiting too. */
  entry: ApiKeyEntry | undefined;
  /**
   * How long the key's requests held a slot lately (ms, exponentially weighted; 0 until one
   * ended): the concurrency cap's Retry-After (concurrencyRetryAfter).
   */
  holdMs: number;
}

/**
 * The concurrency cap's Retry-After: the turn of a request that queues now, from how long the
 * key's requests held a slot lately (as the admission queue's, admission.ts), 1 s at least (and
 * until one ended), 60 s at most (MAX_RETRY_AFTER_S). It said 1 s always: a client that obeyed
 * came back into the same 429 for as long as the key's slots stayed held.
 */
function concurrencyRetryAfter(s: KeyState, concurrency: number): number {
  const turns = (s.waiting.length + 1) / Math.max(1, concurrency);
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil((turns * s.holdMs) / 1000)));
}

/**
 * How long a request over its key's `concurrency` waits for one of the key's requests to end
 * before its 429, and how many may wait per key (docs/operations.md): agents that give up after
 * a few seconds of 429s (Codex: 5 retries 1 s apart; opencode) keep their session when a slot
 * frees within the wait. 30 s: nothing is written to the client while it waits, and that stays
 * under the idle timeouts of proxies in front (nginx: 60 s).
 */
export const DEFAULT_KEY_QUEUE_TIMEOUT_MS = 30_000;
export const DEFAULT_KEY_QUEUE_SIZE = 16;

export type KeyRefusal = 'requests' | 'tokens' | 'concurrency';

/** Ends a request admitted against its key's limits; `sent`: whether any of it went upstream. */
export type KeyEnd = (sent: boolean) => void;

/** What the server asks of the key limits: this process's (KeyLimits) or the group's (group-admission.ts). */
export interface KeyLimiter {
  enter(
    entry: ApiKeyEntry,
    signal: AbortLike,
    admitted: (end: KeyEnd) => void,
    refused?: (reason: KeyRefusal) => void,
  ): Promise<void> | undefined;
  reloaded(keys: readonly ApiKeyEntry[]): void;
  waiting(name: string): number;
  addTokens(name: string, tokens: number): void;
}

/**
 * Each key's counters in this process: requests and tokens in the last minute, requests in
 * flight. Keyed by name, so a reload that changes a key's limits keeps what it already used.
 */
export class KeyLimits implements KeyLimiter {
  private readonly state = new Map<string, KeyState>();
  constructor(
    private readonly now: () => number = Date.now,
    /** Told when a request starts (+1) or stops (-1) waiting for a slot of key `name`. */
    private readonly onWaiting?: (name: string, delta: 1 | -1) => void,
  ) {}

  private of(name: string): KeyState {
    let s = this.state.get(name);
    if (s === undefined) {
      s = {
        inflight: 0,
        requests: new MinuteWindow(),
        tokens: new MinuteWindow(),
        waiting: [],
        entry: undefined,
        holdMs: 0,
      };
      this.state.set(name, s);
    }
    return s;
  }

  /**
   * Admits one request of `entry` or throws TP_ERR_RATE_LIMITED (429, Retry-After, x-ratelimit-*); `refused`
   * is told why first. Returns the function that ends it (call once, when its response closes):
   * `sent` false gives the request back to the minute (nothing of it reached the upstream).
   */
  admit(entry: ApiKeyEntry, refused?: (reason: KeyRefusal) => void): KeyEnd {
    return this.admitIn(this.of(entry.name), entry, refused);
  }

  /**
   * Admits one request of `entry`, calling `admitted` with its end at once, or throws the 429 as
   * admit() does; except that a request over the key's `concurrency` alone waits in the key's
   * queue (first come, first served) up to the key's `queueTimeoutMs` for one of the key's
   * requests to end: then the returned promise resolves, `admitted` having been called in the
   * same turn as the slot was freed (nothing can take it between), or rejects with the 429
   * (the concurrency cap's, once the wait is over; a per-minute limit's, when that one is over by
   * then) or with `signal`'s reason when the client leaves first (its place is freed at once). A
   * full queue (`queueSize` waiting) refuses at once.
   */
  enter(
    entry: ApiKeyEntry,
    signal: AbortLike,
    admitted: (end: KeyEnd) => void,
    refused?: (reason: KeyRefusal) => void,
  ): Promise<void> | undefined {
    const s = this.of(entry.name);
    s.entry = entry;
    // Slots a reload added go to those already waiting first.
    if (s.waiting.length > 0) this.wake(s);
    const waitMs = entry.queueTimeoutMs ?? DEFAULT_KEY_QUEUE_TIMEOUT_MS;
    const over = entry.concurrency !== undefined && (s.inflight >= entry.concurrency || s.waiting.length > 0);
    if (
      !over ||
      waitMs <= 0 ||
      signal.aborted ||
      s.waiting.length >= (entry.queueSize ?? DEFAULT_KEY_QUEUE_SIZE) ||
      // Its per-minute limits are over now: waiting for a slot would only end in that 429.
      this.minuteRefusal(s, entry)
    ) {
      admitted(this.admitIn(s, entry, refused));
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: KeyWaiter = {
        entry,
        admitted,
        refused,
        resolve,
        reject,
        timer: setTimeout(() => {
          if (!this.unqueue(s, waiter)) return;
          try {
            // Still over (a freed slot is handed over at once): the cap's 429, saying it waited.
            admitted(this.admitIn(s, s.entry ?? entry, refused, waitMs));
            resolve();
          } catch (err) {
            reject(err);
          }
        }, waitMs),
        unlisten: () => {},
      };
      waiter.timer.unref();
      waiter.unlisten = listenAbort(signal, () => {
        if (this.unqueue(s, waiter)) reject(signal.reason ?? new Error('aborted'));
      });
      s.waiting.push(waiter);
      this.onWaiting?.(entry.name, 1);
    });
  }

  /**
   * A reload's keys (server/reload.ts): a request waiting for a slot of a key that is gone (revoked,
   * or its secret rotated under the same name) is refused at once as unauthenticated, as its next
   * request would be; it never reaches the upstream. A key that stays takes its new limits now, and
   * the slots a raised `concurrency` adds go to those waiting.
   */
  reloaded(keys: readonly ApiKeyEntry[]): void {
    const current = new Map(keys.map((k) => [k.name, k]));
    for (const [name, s] of this.state) {
      if (s.waiting.length === 0) continue;
      const next = current.get(name);
      for (const w of s.waiting.slice()) {
        if (next !== undefined && next.key === w.entry.key) continue;
        this.unqueue(s, w);
        w.reject(new ToolproofError('TP_ERR_UNAUTHORIZED'));
      }
      if (next === undefined) continue;
      s.entry = next;
      this.wake(s);
    }
  }

  /** Requests waiting for a slot of `name` now (tests, metrics). */
  waiting(name: string): number {
    return this.state.get(name)?.waiting.length ?? 0;
  }

  private unqueue(s: KeyState, w: KeyWaiter): boolean {
    const i = s.waiting.indexOf(w);
    if (i < 0) return false;
    s.waiting.splice(i, 1);
    clearTimeout(w.timer);
    w.unlisten();
    this.onWaiting?.(w.entry.name, -1);
    return true;
  }

  /** Hands free slots to the waiting requests, oldest first (a request of the key just ended). */
  private wake(s: KeyState): void {
    for (;;) {
      const w = s.waiting[0];
      if (w === undefined) return;
      // The key's limits as they stand now (a reload since it queued).
      const entry = s.entry ?? w.entry;
      if (entry.concurrency !== undefined && s.inflight >= entry.concurrency) return;
      this.unqueue(s, w);
      try {
        w.admitted(this.admitIn(s, entry, w.refused));
        w.resolve();
      } catch (err) {
        // Over a per-minute limit by now: its 429, and the slot goes to the next.
        w.reject(err);
      }
    }
  }

  /** Whether a per-minute limit of `entry` refuses a request now. */
  private minuteRefusal(s: KeyState, entry: ApiKeyEntry): boolean {
    const nowSec = Math.floor(this.now() / 1000);
    return (
      (entry.requestsPerMinute !== undefined && s.requests.sum(nowSec) >= entry.requestsPerMinute) ||
      (entry.tokensPerMinute !== undefined && s.tokens.sum(nowSec) >= entry.tokensPerMinute)
    );
  }

  private admitIn(
    s: KeyState,
    entry: ApiKeyEntry,
    refused: ((reason: KeyRefusal) => void) | undefined,
    /** It waited this long in the key's queue (its message says so). */
    waitedMs = 0,
  ): KeyEnd {
    const nowSec = Math.floor(this.now() / 1000);
    // In OpenAI's words ("Rate limit reached for ... on tokens per min (TPM): Limit 30000, Used
    // 29950, Requested 200. Please try again in 6s."), its type ("requests" or "tokens") and code
    // (rate_limit_exceeded, the catalogue's wireCode). The clients go by Retry-After (Codex
    // reads "try again in Ns" only from a stream's response.failed event: docs/operations.md).
    const refuse = (reason: KeyRefusal, seconds: number, what: string): never => {
      refused?.(reason);
      throw new ToolproofError('TP_ERR_RATE_LIMITED', {
        type: reason === 'tokens' ? 'tokens' : 'requests',
        detail: { kind: 'retry-later', retryAfter: String(seconds), limits: this.states(entry, s, nowSec) },
        message: `Rate limit reached for the API key "${entry.name}" on ${what}. Please try again in ${seconds}s.`,
      });
    };
    if (entry.concurrency !== undefined && s.inflight >= entry.concurrency)
      refuse(
        'concurrency',
        concurrencyRetryAfter(s, entry.concurrency),
        `requests at once: Limit ${entry.concurrency}, In flight ${s.inflight}${
          waitedMs > 0
            ? ` (waited ${waitedMs < 1000 ? `${waitedMs}ms` : `${Math.round(waitedMs / 100) / 10}s`} for one to end)`
            : ''
        }`,
      );
    if (entry.requestsPerMinute !== undefined) {
      const used = s.requests.sum(nowSec);
      if (used >= entry.requestsPerMinute)
        refuse(
          'requests',
          untilBelow(s.requests, entry.requestsPerMinute, nowSec),
          `requests per min (RPM): Limit ${entry.requestsPerMinute}, Used ${used}, Requested 1`,
        );
    }
    if (entry.tokensPerMinute !== undefined) {
      const used = s.tokens.sum(nowSec);
      if (used >= entry.tokensPerMinute)
        refuse(
          'tokens',
          untilBelow(s.tokens, entry.tokensPerMinute, nowSec),
          `tokens per min (TPM): Limit ${entry.tokensPerMinute}, Used ${used}`,
        );
    }
    s.requests.add(1, nowSec);
    s.inflight++;
    let done = false;
    const started = this.now();
    return (sent) => {
      if (done) return;
      done = true;
      s.inflight--;
      const held = this.now() - started;
      s.holdMs = s.holdMs === 0 ? held : s.holdMs * 0.8 + held * 0.2;
      if (!sent) s.requests.remove(1, nowSec);
      if (s.waiting.length > 0) this.wake(s);
    };
  }

  /** The key's per-minute limits as they stand (OpenAI's x-ratelimit-* headers on its 429). */
  private states(entry: ApiKeyEntry, s: KeyState, nowSec: number): KeyLimitStates {
    const state = (limit: number, w: MinuteWindow): KeyLimitState => ({
      limit,
      remaining: Math.max(0, limit - w.sum(nowSec)),
      resetSeconds: w.secondsUntilEmpty(nowSec),
    });
    return {
      ...(entry.requestsPerMinute === undefined
        ? {}
        : { requests: state(entry.requestsPerMinute, s.requests) }),
      ...(entry.tokensPerMinute === undefined ? {} : { tokens: state(entry.tokensPerMinute, s.tokens) }),
    };
  }

  /** Tokens a request of `name` used (prompt + completion, as the upstream reported them). */
  addTokens(name: string, tokens: number): void {
    if (tokens > 0) this.of(name).tokens.add(tokens, Math.floor(this.now() / 1000));
  }
}

/**
 * Counts the request against its key's limits (requests and tokens per minute, concurrency), or
 * throws the 429. Called where a request is about to go upstream for its model to process: a
 * front door's call once its model is known and its body valid, /v1/completions and
 * /v1/embeddings, a pass-through request that is not a read (docs/operations.md, "What counts").
 * Never for what toolproof answers itself (the model list, count_tokens, the inspector) nor for a
 * request refused before (401, 403, 404, the client's own 400). Once per request.
 */
export function countAgainstKey(
  request: FastifyRequest,
  limits: KeyLimiter,
  metrics: Metrics,
  /** The request's own abort (its client leaving): a request waiting for a slot leaves the queue. */
  signal: AbortLike,
): Promise<void> | undefined {
  const entry = request.tpKey;
  if (entry === undefined || request.tpKeyEnd !== undefined || request.tpKeyWait !== undefined) return;
  // The key's queue wait (0: a slot was free), served or refused after it, or refused at once.
  const from = entry.concurrency === undefined ? undefined : performance.now();
  const waited = (at = true) => {
    if (from !== undefined)
      metrics.keyQueued.labels(entry.name).observe(at ? (performance.now() - from) / 1000 : 0);
  };
  let waiting: Promise<void> | undefined;
  try {
    waiting = limits.enter(
      entry,
      signal,
      // Bound in the turn the slot is taken: a client gone by then gives it back (app.ts's close).
      (end) => {
        request.tpKeyEnd = end;
      },
      (reason) => metrics.keyRefusals.labels(entry.name, reason).inc(),
    );
  } catch (err) {
    waited(false);
    throw err;
  }
  if (waiting)
    waiting.then(
      () => waited(),
      () => waited(),
    );
  else waited(false);
  if (waiting) request.tpKeyWait = waiting;
  return waiting;
}

/**
 * Who a request waits as in the upstream's admission queue (docs/operations.md, "Fair shares"):
 * its named key; without one (no keys, or a key of the flat TOOLPROOF_API_KEYS list, all named
 * `default`), the client's address. Not a session id: a client could mint one per request and
 * count as many owners, and an agent's sub-agents each carry their own (Codex) or none (then
 * each opens a conversation of its own); an address groups one machine's agent with its
 * sub-agents, and only a TCP connection can present it. Agents on one machine share it.
 */
export function admissionOwner(request: FastifyRequest, entry: ApiKeyEntry | undefined): AdmissionOwner {
  if (entry !== undefined && entry.name !== UNNAMED_KEY)
    return {
      id: `key ${entry.name}`,
      named: true,
      key: entry.name,
      ...(entry.weight ? { weight: entry.weight } : {}),
    };
  return {
    // A request another worker relayed (worker-relay.ts) waits as its client, not as that worker.
    id: `address ${clientAddress(request) ?? ''}`,
    named: false,
    ...(entry === undefined ? {} : { key: entry.name }),
  };
}
