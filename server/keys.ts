/**
 * Client keys with names and limits (docs/operations.md). The key ring is built once per
 * configuration (a reload's new one takes over at the next request: a revoked key is refused at
 * once); the limits' counters live per app and outlive reloads, by key name.
 *
 * Keys are compared in constant time: both sides hashed to a fixed length first, and every
 * configured key is checked, so timing reveals neither length nor which key matched. Keys are
 * never logged (the logger redacts authorization headers); only their names are.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { globMatch } from '../protocol/glob.js';
import { type KeyLimitState, type KeyLimitStates, ToolproofError } from '../protocol/errors.js';
import type { ApiKeyEntry } from './config-keys.js';
import type { Config } from './config.js';
import type { Metrics } from './metrics.js';

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

export class KeyRing {
  private readonly digests: Buffer[];
  constructor(readonly entries: readonly ApiKeyEntry[]) {
    this.digests = entries.map((e) => digest(e.key));
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
    const candidate = digest(presented ?? '');
    let found = -1;
    for (let i = 0; i < this.digests.length; i++) if (timingSafeEqual(this.digests[i]!, candidate)) found = i;
    return presented && found >= 0 ? this.entries[found] : undefined;
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

interface KeyState {
  inflight: number;
  requests: MinuteWindow;
  tokens: MinuteWindow;
}

export type KeyRefusal = 'requests' | 'tokens' | 'concurrency';

/** Ends a request admitted against its key's limits; `sent`: whether any of it went upstream. */
export type KeyEnd = (sent: boolean) => void;

/**
 * Each key's counters in this process: requests and tokens in the last minute, requests in
 * flight. Keyed by name, so a reload that changes a key's limits keeps what it already used.
 */
export class KeyLimits {
  private readonly state = new Map<string, KeyState>();
  constructor(private readonly now: () => number = Date.now) {}

  private of(name: string): KeyState {
    let s = this.state.get(name);
    if (s === undefined) {
      s = { inflight: 0, requests: new MinuteWindow(), tokens: new MinuteWindow() };
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
    const s = this.of(entry.name);
    const nowSec = Math.floor(this.now() / 1000);
    // In OpenAI's words ("Rate limit reached for ... on tokens per min (TPM): Limit 30000, Used
    // 29950, Requested 200. Please try again in 6s."), its type ("requests" or "tokens") and code
    // (rate_limit_exceeded, the catalogue's wireCode): Codex retries a `rate_limit_exceeded` after
    // the "try again in Ns" it reads from the message; the SDKs read Retry-After.
    const refuse = (reason: KeyRefusal, seconds: number, what: string): never => {
      refused?.(reason);
      throw new ToolproofError('TP_ERR_RATE_LIMITED', {
        type: reason === 'tokens' ? 'tokens' : 'requests',
        detail: { kind: 'retry-later', retryAfter: String(seconds), limits: this.states(entry, s, nowSec) },
        message: `Rate limit reached for the API key "${entry.name}" on ${what}. Please try again in ${seconds}s.`,
      });
    };
    if (entry.concurrency !== undefined && s.inflight >= entry.concurrency)
      refuse('concurrency', 1, `requests at once: Limit ${entry.concurrency}, In flight ${s.inflight}`);
    if (entry.requestsPerMinute !== undefined) {
      const used = s.requests.sum(nowSec);
      if (used >= entry.requestsPerMinute)
        refuse(
          'requests',
          s.requests.secondsUntilBelow(entry.requestsPerMinute, nowSec),
          `requests per min (RPM): Limit ${entry.requestsPerMinute}, Used ${used}, Requested 1`,
        );
    }
    if (entry.tokensPerMinute !== undefined) {
      const used = s.tokens.sum(nowSec);
      if (used >= entry.tokensPerMinute)
        refuse(
          'tokens',
          s.tokens.secondsUntilBelow(entry.tokensPerMinute, nowSec),
          `tokens per min (TPM): Limit ${entry.tokensPerMinute}, Used ${used}`,
        );
    }
    s.requests.add(1, nowSec);
    s.inflight++;
    let done = false;
    return (sent) => {
      if (done) return;
      done = true;
      s.inflight--;
      if (!sent) s.requests.remove(1, nowSec);
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
export function countAgainstKey(request: FastifyRequest, limits: KeyLimits, metrics: Metrics): void {
  const entry = request.tpKey;
  if (entry === undefined || request.tpKeyEnd !== undefined) return;
  request.tpKeyEnd = limits.admit(entry, (reason) => metrics.keyRefusals.labels(entry.name, reason).inc());
}
