/**
 * The one adapter to undici. Only this file knows undici's error codes; it maps them to the
 * error catalogue (502 unreachable, 504 timeout). One BalancedPool per upstream target (the
 * replicas of one deployment), keep-alive, connect / first-byte / idle timeouts, and an abort
 * signal that the route ties to the client's connection: a client that goes away cancels the
 * upstream request at once, so the GPU stops generating for nobody.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { BalancedPool, type Dispatcher, Pool, errors as undiciErrors } from 'undici';
import { ToolproofError } from '../protocol/errors.js';
import type { AbortLike } from './abort.js';
import type { Timeouts, UpstreamTarget } from './config.js';
import { ExchangeHandler, type UpstreamBody, type UpstreamHead } from './upstream-body.js';

export interface UpstreamRequest {
  method: Dispatcher.HttpMethod;
  /** Path relative to the upstream's base URL, e.g. '/chat/completions'. */
  path: string;
  /** The path is relative to the upstream's origin instead (e.g. vLLM's /tokenize, outside /v1). */
  fromOrigin?: boolean;
  body?: string | Buffer;
  headers?: Record<string, string>;
  signal: AbortLike;
  /**
   * The response may last long (a stream): send the body from a one-shot source, so that the
   * transport keeps no copy of it for as long as the response lasts. undici holds a Buffer body
   * on its request until the exchange ends, and a held stream would keep its whole request (an
   * agent's history: tens or hundreds of KB) for minutes. Costs a few µs per request.
   */
  long?: boolean;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Read it whole (bytes, partial), by iteration, or dump/destroy it: a body left unread holds the connection. */
  body: UpstreamBody;
  /** Which target served it (label for logs, metrics and the fallback memory). */
  upstream: string;
}

const RETRYABLE_CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function errorCode(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur && typeof cur === 'object' && !seen.has(cur)) {
    seen.add(cur);
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return (err as { code?: string } | undefined)?.code;
}

/** Maps a transport failure to the catalogue. Aborts by our own signal are re-thrown as-is. */
export function toUpstreamError(err: unknown, label: string): ToolproofError | Error {
  if (err instanceof ToolproofError) return err;
  const code = errorCode(err);
  if (code === 'UND_ERR_ABORTED' || (err as Error)?.name === 'AbortError') return err as Error;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
      message: `The upstream ${label} sent no response within the first-byte timeout.`,
      cause: err,
    });
  }
  if (code === 'UND_ERR_BODY_TIMEOUT') {
    return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
      message: `The upstream ${label} stalled: no data within the idle timeout.`,
      cause: err,
    });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
      message: `Connecting to the upstream ${label} timed out.`,
      cause: err,
    });
  }
  return new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
    message: `The upstream ${label} is unreachable (${code ?? (err as Error)?.message ?? 'unknown error'}).`,
    cause: err,
  });
}

/**
 * How an upstream is named in errors, /ready, metrics and logs: its URLs without any userinfo
 * (config refuses credentials in URLs; this is the second line of defence).
 */
export function upstreamLabel(urls: readonly string[]): string {
  return urls
    .map((u) => {
      try {
        const p = new URL(u);
        p.username = '';
        p.password = '';
        return p.toString().replace(/\/+$/, '');
      } catch {
        return '(invalid url)';
      }
    })
    .join(',');
}

/** A body undici reads once and forgets (see UpstreamRequest.long), with its length declared. */
function oneShot(
  body: string | Buffer,
  headers: Record<string, string>,
): { headers: Record<string, string>; body: Dispatcher.DispatchOptions['body'] } {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return {
    headers: { ...headers, 'content-length': String(bytes.length) },
    // dispatch() takes any (async) iterable (undici's Dispatcher docs); its types list fewer.
    body: new OneShotBody(bytes) as unknown as Dispatcher.DispatchOptions['body'],
  };
}

/** Yields its bytes once, then holds nothing (its own iterator: no generator frame to keep). */
class OneShotBody implements AsyncIterable<Buffer>, AsyncIterator<Buffer, undefined> {
  constructor(private bytes: Buffer | null) {}

  [Symbol.asyncIterator](): AsyncIterator<Buffer, undefined> {
    return this;
  }

  next(): Promise<IteratorResult<Buffer, undefined>> {
    const bytes = this.bytes;
    this.bytes = null;
    return Promise.resolve(bytes === null ? { done: true, value: undefined } : { done: false, value: bytes });
  }

  return(): Promise<IteratorResult<Buffer, undefined>> {
    this.bytes = null;
    return Promise.resolve({ done: true, value: undefined });
  }
}

export class UpstreamClient {
  readonly label: string;
  /** A BalancedPool over the replicas; a plain Pool when there is only one (no balancing to pay for). */
  private readonly pool: BalancedPool | Pool;
  private readonly basePath: string;
  private readonly authorization: string | undefined;
  private readonly replicas: number;
  /**
   * Longest silence between two events of a streamed response. undici's bodyTimeout only sees
   * bytes, so an upstream that sends nothing but SSE comments or blank lines would hold a stream
   * forever; the stream driver applies this to events.
   */
  readonly idleMs: number;

  constructor(target: UpstreamTarget, timeouts: Timeouts) {
    this.idleMs = timeouts.idleMs;
    const first = new URL(target.urls[0]!);
    this.basePath = first.pathname.replace(/\/+$/, '');
    this.label = upstreamLabel(target.urls);
    this.replicas = target.urls.length;
    this.authorization = target.apiKey ? `Bearer ${target.apiKey}` : undefined;
    const options = {
      connect: { timeout: timeouts.connectMs },
      headersTimeout: timeouts.firstByteMs,
      bodyTimeout: timeouts.idleMs,
      keepAliveTimeout: 4_000, // below llama-server's Keep-Alive: timeout=5 so we never reuse a socket it is closing
      keepAliveMaxTimeout: 60_000,
      pipelining: 1,
    };
    const origins = target.urls.map((u) => new URL(u).origin);
    this.pool = origins.length === 1 ? new Pool(origins[0]!, options) : new BalancedPool(origins, options);
  }

  /**
   * Sends one request. A replica that refuses the connection is skipped (the request never
   * reached it, so retrying elsewhere is safe); any other failure is final here.
   */
  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    // The caller's headers are used as they are when nothing needs adding (the chat path sends
    // its content-type already): no copy per request.
    let headers: Record<string, string> = req.headers ?? {};
    const needsType = req.body !== undefined && headers['content-type'] === undefined;
    if (needsType || this.authorization) {
      headers = { ...headers };
      if (needsType) headers['content-type'] = 'application/json';
      if (this.authorization) headers.authorization = this.authorization;
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < this.replicas; attempt++) {
      if (req.signal.aborted) throw req.signal.reason ?? new Error('aborted');
      try {
        const res = await this.exchange(
          {
            method: req.method,
            path: req.fromOrigin ? req.path : this.basePath + req.path,
            ...(req.long && req.body !== undefined && req.body.length > 0
              ? oneShot(req.body, headers)
              : { headers, body: req.body ?? null }),
          },
          req.signal,
        );
        return { status: res.status, headers: res.headers, body: res.body, upstream: this.label };
      } catch (err) {
        lastError = err;
        const code = errorCode(err);
        if (!code || !RETRYABLE_CONNECT_CODES.has(code) || req.signal.aborted) break;
      }
    }
    // Cancelled by the client: not an upstream failure, rethrown as it is.
    if (req.signal.aborted) throw lastError;
    throw toUpstreamError(lastError, this.label);
  }

  /** One dispatch, resolved at the response's headers (see upstream-body.ts for why not request()). */
  private exchange(opts: Dispatcher.DispatchOptions, signal: AbortLike): Promise<UpstreamHead> {
    return new Promise<UpstreamHead>((resolve, reject) => {
      const handler = new ExchangeHandler(signal, resolve, reject);
      try {
        this.pool.dispatch(opts, handler);
      } catch (err) {
        handler.onResponseError(null, err as Error);
      }
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}

/** One client per distinct target (models that share an upstream share its pool). */
export class Upstreams {
  private readonly clients = new Map<string, UpstreamClient>();
  constructor(private readonly timeouts: Timeouts) {}

  /** Targets are frozen config objects: the per-request lookup is by identity, the key only on first use. */
  private readonly byTarget = new WeakMap<UpstreamTarget, UpstreamClient>();

  for(target: UpstreamTarget): UpstreamClient {
    const known = this.byTarget.get(target);
    if (known) return known;
    const key = `${target.urls.join(',')}|${target.apiKey ?? ''}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new UpstreamClient(target, this.timeouts);
      this.clients.set(key, client);
    }
    this.byTarget.set(target, client);
    return client;
  }

  all(): UpstreamClient[] {
    return [...this.clients.values()];
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((c) => c.close()));
  }

  async destroy(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((c) => c.destroy()));
  }
}

export { undiciErrors };
