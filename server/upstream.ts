/**
 * The one adapter to undici. Only this file knows undici's error codes; it maps them to the
 * error catalogue (502 unreachable, 504 timeout). One BalancedPool per upstream target (the
 * replicas of one deployment), keep-alive, connect / first-byte / idle timeouts, and an abort
 * signal that the route ties to the client's connection: a client that goes away cancels the
 * upstream request at once, so the GPU stops generating for nobody.
 */
import type { IncomingHttpHeaders } from 'node:http';
import {
  BalancedPool,
  type Dispatcher,
  Pool,
  request as undiciRequest,
  errors as undiciErrors,
} from 'undici';
import { ToolproofError } from '../protocol/errors.js';
import type { AbortLike } from './abort.js';
import {
  type AdmissionOwner,
  AdmissionGate,
  type AdmissionHooks,
  type Gate,
  type PriorityClass,
  type Ticket,
} from './admission.js';
import { DecodeMeter, DecodePaces, type PaceOf } from './decode-meter.js';
import type { KeyWaitTicket } from './key-waits.js';
import { GroupGate, groupChannel } from './group-admission.js';
import {
  type AffinityConfig,
  DEFAULT_AFFINITY,
  type Timeouts,
  type UpstreamAdmission,
  type UpstreamTarget,
} from './config.js';
import { readProbeJson } from './probe-json.js';
import { ReplicaSet } from './replica-set.js';
import { UpstreamSecrets } from './upstream-secrets.js';
import { ExchangeHandler, type UpstreamBody, type UpstreamHead } from './upstream-body.js';
import { ConnectionProbe, isClosedConnection, probedClient, probedPool } from './upstream-connection.js';

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
   * The conversation's affinity key (affinity.ts): with several replicas, the same key goes to
   * the same replica while it is up and not saturated. Without one, the least loaded replica.
   */
  affinity?: string;
  /**
   * The response may last long (a stream): send the body from a one-shot source, so that the
   * transport keeps no copy of it for as long as the response lasts. undici holds a Buffer body
   * on its request until the exchange ends, and a held stream would keep its whole request (an
   * agent's history: tens or hundreds of KB) for minutes. Costs a few µs per request.
   */
  long?: boolean;
  /**
   * The request may be sent once more when it failed on a reused keep-alive connection that the
   * upstream had already closed (see ConnectionProbe.unanswered). Default true: toolproof's own
   * requests (completions, embeddings, counts, model lists) have no effect beyond their answer.
   * The pass-through sets it for idempotent methods only: another route's POST is the client's to retry.
   */
  replayable?: boolean;
  /**
   * Wait for a slot of the replica's admission (admission.ts) with this priority class; told how
   * long it waited. Absent: sent at once (ops probes, the pass-through).
   */
  /**
   * `owner`: who it waits as (keys.ts admissionOwner), for the queue's fairness between clients;
   * `key`: its client's key, whose revocation by a reload ends its first wait (key-waits.ts).
   */
  admission?: { cls: PriorityClass; owner?: AdmissionOwner; key?: KeyWaitTicket; queued(ms: number): void };
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Read it whole (bytes, partial), by iteration, or dump/destroy it: a body left unread holds the connection. */
  body: UpstreamBody;
  /** Which target served it (label for logs, metrics and the fallback memory). */
  upstream: string;
  /** Which replica of the target (its origin), for the log line. */
  replica?: string;
}

/**
 * How many times one request is sent again after stale connections. The replay may leave on
 * another idle connection of the pool (or of another replica) that the same server timer, or
 * the same stall of this process, closed too; each stale one is destroyed as it fails, so a
 * few tries reach a fresh connection, and a failure on a fresh connection is final at once.
 */
const MAX_STALE_REPLAYS = 3;

/** How long an idle pooled connection is kept (see the pool options). */
const POOL_KEEP_ALIVE_MS = 3_000;

const RETRYABLE_CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * A request that failed on a pooled connection the upstream had closed (the connection had
 * carried an earlier response, and closed or reset before any byte of this one: see
 * ConnectionProbe.unanswered). The server's keep-alive timer (uvicorn's 5 s) fired as the
 * request left, or while this process was stalled past it (proved by the close's timing, or by
 * the idle time against the server's `Keep-Alive: timeout=N`). Sent once more on a fresh connection.
 */
class StaleConnection {
  constructor(readonly cause: unknown) {}
}

/** A closed connection's circumstances (ConnectionProbe.closeDetail), for the error the client gets. */
const closeDetails = new WeakMap<object, string>();

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
  if (code === 'TP_UPSTREAM_WHOLE_BODY_TIMEOUT') {
    return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
      message: `The upstream ${label} did not send its whole response within the idle timeout (${(err as { ms: number }).ms} ms).`,
      cause: err,
    });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
      message: `Connecting to the upstream ${label} timed out.`,
      cause: err,
    });
  }
  const closed = typeof err === 'object' && err !== null ? closeDetails.get(err) : undefined;
  if (closed !== undefined) {
    return new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
      message: `The upstream ${label} closed the connection under the request (${code ?? 'closed'}), ${closed}. Not sent again: the upstream may have read it.`,
      cause: err,
    });
  }
  return new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
    message: `The upstream ${label} is unreachable (${code ?? (err as Error)?.message ?? 'unknown error'}).`,
    cause: err,
  });
}

/**
 * A failure while reading a response the upstream had begun (its headers came): a closed or
 * reset connection is a cut (TP_ERR_UPSTREAM_CUT_OFF), never "unreachable"; a timeout, a
 * too-large event or an abort maps as toUpstreamError maps it.
 */
export function toCutError(err: unknown, label: string, what: string): ToolproofError | Error {
  const mapped = toUpstreamError(err, label);
  if (!(mapped instanceof ToolproofError) || mapped.code !== 'TP_ERR_UPSTREAM_UNREACHABLE') return mapped;
  return new ToolproofError('TP_ERR_UPSTREAM_CUT_OFF', {
    message: `The upstream ${label} closed ${what} before it ended (${errorCode(err) ?? 'closed'}).`,
    cause: err,
  });
}

/**
 * How an upstream is named in errors, /ready, metrics and logs: its URLs without any userinfo
 * (config refuses credentials in URLs; this is the second line of defence).
 */
function upstreamLabel(urls: readonly string[]): string {
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

/**
 * An exchange that tells its ConnectionProbe when its request is written, answered and done, and
 * its admission ticket the tokens the response generates (DecodeMeter), before the slot goes back.
 */
class ProbedExchange extends ExchangeHandler {
  private meter: DecodeMeter | undefined;
  /** Tokens charged so far. */
  private charged = 0;
  /** When the request went out (performance.now()). */
  private started = 0;
  /** The exchange's abort signal: the client left (or the call was cancelled). */
  private readonly aborted: AbortLike;

  constructor(
    private readonly probe: ConnectionProbe,
    private readonly charge: ((tokens: number) => void) | undefined,
    /** Its owner's pace (an answer the client left, with no token counted, is charged its time). */
    private readonly pace: PaceOf | undefined,
    ...args: ConstructorParameters<typeof ExchangeHandler>
  ) {
    super(...args);
    this.aborted = args[0];
  }

  override onRequestStart(controller: Dispatcher.DispatchController): void {
    this.started = performance.now();
    this.probe.started();
    super.onRequestStart(controller);
  }

  override onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    const keepAlive = headers['keep-alive'];
    this.probe.answered(typeof keepAlive === 'string' ? keepAlive : undefined);
    if (this.charge !== undefined && statusCode >= 200) {
      const type = headers['content-type'];
      this.meter = new DecodeMeter(typeof type === 'string' && type.includes('text/event-stream'));
    }
    super.onResponseStart(controller, statusCode, headers);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const meter = this.meter;
    if (meter !== undefined) {
      // A unit of decode at a time: a long stream moves its owner's share as it runs (one message
      // to the cluster primary per unit at most, with TOOLPROOF_WORKERS).
      const events = meter.push(chunk);
      if (events - this.charged >= CHARGE_EVERY_TOKENS) this.chargeUpTo(events);
    }
    super.onResponseData(controller, chunk);
  }

  override onResponseEnd(): void {
    this.probe.ended();
    // Before the slot goes back (super's settle): the next admission sees this request's cost.
    if (this.meter !== undefined) {
      const tokens = this.meter.total();
      this.chargeUpTo(tokens);
      this.pace?.learn(performance.now() - this.started, tokens);
    }
    super.onResponseEnd();
  }

  override onResponseError(controller: Dispatcher.DispatchController | null, err: Error): void {
    const tokens = this.meter?.total() ?? 0;
    // The client left before any token was counted (a non-streamed answer's come at its end):
    // charged the tokens the time it held the slot makes (DecodePace).
    if (tokens === 0 && this.aborted.aborted && this.started > 0 && this.charge !== undefined)
      this.chargeUpTo(this.pace?.tokensIn(performance.now() - this.started) ?? 0);
    else this.chargeUpTo(tokens);
    super.onResponseError(controller, err);
  }

  private chargeUpTo(tokens: number): void {
    if (tokens <= this.charged) return;
    this.charge?.(tokens - this.charged);
    this.charged = tokens;
  }
}

/** How often a stream's decode work is charged while it runs (a unit of admission.ts decodeCost). */
const CHARGE_EVERY_TOKENS = 64;

export class UpstreamClient {
  readonly label: string;
  /** The first replica's origin (a trace's server.address when the response names none). */
  readonly origin: string;
  /**
   * A plain Pool when there is only one replica; with several, a ReplicaSet (session affinity)
   * or, with affinity off, a BalancedPool (every request to any replica).
   */
  private readonly pool: BalancedPool | Pool | undefined;
  private readonly set: ReplicaSet | undefined;
  private readonly basePath: string;
  /** The first replica's base URL with its path prefix (the inspector's copy-as-curl). */
  readonly baseUrl: string;
  private readonly authorization: string | undefined;
  /** Whether requests carry the backend's key (`authorization`, added in request()). */
  get sendsKey(): boolean {
    return this.authorization !== undefined;
  }
  readonly replicas: number;
  /**
   * Longest silence between two events of a streamed response. undici's bodyTimeout only sees
   * bytes, so an upstream that sends nothing but SSE comments or blank lines would hold a stream
   * forever; the stream driver applies this to events.
   */
  readonly idleMs: number;
  /** Admission per replica (one for a BalancedPool, which picks the replica itself). */
  private readonly gates: Gate[] = [];
  /** How long its slots are held per token generated, its own and each owner's (decode-meter.ts). */
  private readonly paces = new DecodePaces();
  private readonly origins: string[];
  /** The upstream runs vLLM's priority scheduling: requests carry their class's `priority`. */
  schedulingPriority = false;

  constructor(
    target: UpstreamTarget,
    timeouts: Timeouts,
    affinity: AffinityConfig = DEFAULT_AFFINITY,
    private readonly onReplay?: (upstream: string) => void,
    private readonly admissionHooks?: (upstream: string) => AdmissionHooks,
    /** Every upstream key toolproof sends, scrubbed from what this upstream answers (upstream-secrets.ts). */
    readonly secrets: UpstreamSecrets = new UpstreamSecrets(),
  ) {
    secrets.add(target.apiKey);
    this.idleMs = timeouts.idleMs;
    const first = new URL(target.urls[0]!);
    this.origin = first.origin;
    this.basePath = first.pathname.replace(/\/+$/, '');
    this.baseUrl = `${first.origin}${this.basePath}`;
    this.label = upstreamLabel(target.urls);
    this.replicas = target.urls.length;
    this.authorization = target.apiKey ? `Bearer ${target.apiKey}` : undefined;
    const options = {
      connect: { timeout: timeouts.connectMs },
      headersTimeout: timeouts.firstByteMs,
      bodyTimeout: timeouts.idleMs,
      // An idle connection is closed well before the common server defaults close it (uvicorn,
      // hence vLLM, 5 s without a Keep-Alive header; llama-server and node 5 s), with room for
      // undici's coarse timers; a server whose Keep-Alive header says how long it waits is believed
      // (less 2 s, up to keepAliveMaxTimeout). A request that still meets a connection the server
      // closed is sent again (StaleConnection).
      keepAliveTimeout: POOL_KEEP_ALIVE_MS,
      keepAliveMaxTimeout: 60_000,
      pipelining: 1,
      // Clients that tell a request which connection it went out on (upstream-connection.ts).
      factory: probedClient,
    };
    const origins = target.urls.map((u) => new URL(u).origin);
    this.origins = origins;
    if (origins.length > 1 && affinity.enabled) this.set = new ReplicaSet(origins, options, affinity);
    else
      this.pool =
        origins.length === 1
          ? new Pool(origins[0]!, options)
          : new BalancedPool(origins, { ...options, factory: probedPool });
    this.configure(target.admission);
  }

  /** Admission as configured now (at start and on each reload); queued requests stay queued. */
  configure(admission: UpstreamAdmission | undefined): void {
    this.schedulingPriority = admission?.schedulingPriority === true;
    const settings = admission ?? { reserved: 0, queueSize: 0, queueTimeoutMs: 0 };
    if (this.gates.length > 0) {
      for (const gate of this.gates) gate.configure(settings);
      return;
    }
    const n = this.set ? this.origins.length : 1;
    const hooks = this.admissionHooks?.(this.label) ?? {};
    for (let i = 0; i < n; i++) {
      // A BalancedPool's replicas share one gate: its 'auto' limit is the first replica's slots
      // times the replicas.
      const origin = this.origins[i]!;
      const scale = this.set ? 1 : this.origins.length;
      const gateHooks = { ...hooks, probeLimit: () => this.probeSlots(origin, scale) };
      // TOOLPROOF_WORKERS > 1: the replica's one gate is the group's, in the cluster primary.
      const group = groupChannel();
      this.gates.push(
        group
          ? new GroupGate(group, `${this.origins.join(',')}#${i}`, settings, gateHooks)
          : new AdmissionGate(settings, gateHooks),
      );
    }
  }

  /** Admission load per gate (tests, operations). */
  admissionLoad(): Array<Gate['load']> {
    return this.gates.map((g) => g.load);
  }

  /**
   * llama-server's slot count (`/props` total_slots, its `-np`); undefined when the backend does
   * not say. With TOOLPROOF_WORKERS > 1 the group's one gate (in the cluster primary) takes it whole.
   */
  private async probeSlots(origin: string, scale: number): Promise<number | undefined> {
    const res = await undiciRequest(`${origin}/props`, {
      method: 'GET',
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
      // The whole probe, body included: bodyTimeout is the silence between two chunks, and a
      // /props trickled a byte a second held the probe (never asked again) to its 1 MiB limit.
      signal: AbortSignal.timeout(5_000),
      ...(this.authorization ? { headers: { authorization: this.authorization } } : {}),
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return undefined;
    }
    const body = (await readProbeJson(res.body)) as { total_slots?: unknown } | undefined;
    const slots = body?.total_slots;
    if (typeof slots !== 'number' || !Number.isInteger(slots) || slots < 1) return undefined;
    return slots * scale;
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
    let replays = 0;
    const tried: number[] = [];
    for (let attempt = 0; attempt < this.replicas; attempt++) {
      if (req.signal.aborted) throw req.signal.reason ?? new Error('aborted');
      const replica = this.set?.pick(req.affinity, tried);
      let ticket: Ticket | undefined;
      if (req.admission !== undefined) {
        const gate = this.gates[replica ?? 0]!;
        const key = req.admission.key;
        // Its first way upstream waits on a signal that its key's revocation aborts too.
        const joined = key !== undefined && !key.reached ? key.waits.join(key.entry, req.signal) : undefined;
        try {
          // Revoked since its key let it in (a reload while its documents were read): not sent.
          if (joined?.signal.aborted) throw joined.signal.reason;
          const entered = gate.enter(
            req.admission.cls,
            joined?.signal ?? req.signal,
            req.admission.owner,
            // Bytes, as prefilled: a string body (a relayed body written again) counted its
            // UTF-16 characters, a CJK prompt a third of its size.
            typeof req.body === 'string' ? Buffer.byteLength(req.body) : req.body?.length,
          );
          ticket = entered instanceof Promise ? await entered : entered;
        } finally {
          joined?.leave();
        }
        if (ticket.queuedMs > 0) req.admission.queued(ticket.queuedMs);
      }
      try {
        const res = await this.exchange(
          ticket,
          replica,
          {
            method: req.method,
            path: req.fromOrigin ? req.path : this.basePath + req.path,
            ...(req.long && req.body !== undefined && req.body.length > 0
              ? oneShot(req.body, headers)
              : { headers, body: req.body ?? null }),
          },
          req.signal,
          req.admission?.owner?.id,
        );
        // It reached the model: its later attempts finish on the configuration it started with.
        if (req.admission?.key !== undefined) req.admission.key.reached = true;
        // A body read whole is one event to the idle clock (upstream-body.ts wholeWithinMs).
        res.body.wholeWithinMs = this.idleMs;
        return {
          status: res.status,
          headers: res.headers,
          body: res.body,
          upstream: this.label,
          ...(replica !== undefined && this.set ? { replica: this.set.origins[replica] } : {}),
        };
      } catch (caught) {
        ticket?.release();
        let err = caught;
        if (err instanceof StaleConnection) {
          if (replays < MAX_STALE_REPLAYS && req.replayable !== false && !req.signal.aborted) {
            replays++;
            this.onReplay?.(this.label);
            attempt--;
            continue;
          }
          err = err.cause;
        }
        lastError = err;
        if (req.signal.aborted) break;
        const code = errorCode(err);
        if (!code || !RETRYABLE_CONNECT_CODES.has(code) || req.signal.aborted) break;
        if (replica !== undefined) {
          this.set?.markDown(replica);
          tried.push(replica);
        }
      }
    }
    // Cancelled by the client: not an upstream failure, rethrown as it is.
    if (req.signal.aborted) throw lastError;
    throw toUpstreamError(lastError, this.label);
  }

  /** One dispatch, resolved at the response's headers (see upstream-body.ts for why not request()). */
  private exchange(
    ticket: Ticket | undefined,
    replica: number | undefined,
    opts: Dispatcher.DispatchOptions,
    signal: AbortLike,
    /** Its admission owner's id (DecodePaces). */
    owner?: string,
  ): Promise<UpstreamHead> {
    const set = this.set;
    return new Promise<UpstreamHead>((resolve, reject) => {
      // In flight from dispatch to the end of the body (or its failure): the replica's load,
      // and the admission slot (released twice is harmless: the ticket counts once).
      const inflight = set && replica !== undefined ? set.acquire(replica) : undefined;
      const settle =
        ticket === undefined
          ? inflight
          : inflight === undefined
            ? ticket.release
            : () => {
                inflight();
                ticket.release();
              };
      const probe = new ConnectionProbe(opts);
      const handler = new ProbedExchange(
        probe,
        ticket?.charge === undefined ? undefined : (tokens) => ticket.charge?.(tokens),
        ticket?.charge === undefined ? undefined : this.paces.of(owner),
        signal,
        resolve,
        (err) => {
          if (!isClosedConnection(err)) reject(err);
          else if (probe.unanswered()) reject(new StaleConnection(err));
          else {
            const detail = probe.closeDetail();
            if (detail !== undefined && typeof err === 'object' && err !== null)
              closeDetails.set(err, detail);
            reject(err);
          }
        },
        settle,
        this.secrets,
      );
      try {
        (set && replica !== undefined ? set.pools[replica]! : this.pool!).dispatch(opts, handler);
      } catch (err) {
        handler.onResponseError(null, err as Error);
      }
    });
  }

  close(): Promise<void> {
    return this.set ? this.set.close() : this.pool!.close();
  }

  destroy(): Promise<void> {
    return this.set ? this.set.destroy() : this.pool!.destroy();
  }
}

/** One client per distinct target (models that share an upstream share its pool). */
export class Upstreams {
  private readonly clients = new Map<string, UpstreamClient>();
  /** The keys of every client: any one echoed by any upstream is scrubbed. */
  readonly secrets = new UpstreamSecrets();
  constructor(
    private readonly timeouts: Timeouts,
    private readonly affinity: AffinityConfig = DEFAULT_AFFINITY,
    /** Told of each stale-connection replay, with the client's upstream label (a metric). */
    private readonly onReplay?: (upstream: string) => void,
    /** The admission gates' metrics, per upstream label. */
    private readonly admissionHooks?: (upstream: string) => AdmissionHooks,
  ) {}

  /** Targets are frozen config objects: the per-request lookup is by identity, the key only on first use. */
  private readonly byTarget = new WeakMap<UpstreamTarget, UpstreamClient>();

  for(target: UpstreamTarget): UpstreamClient {
    const known = this.byTarget.get(target);
    if (known) return known;
    const key = `${target.urls.join(',')}|${target.apiKey ?? ''}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new UpstreamClient(
        target,
        this.timeouts,
        this.affinity,
        this.onReplay,
        this.admissionHooks,
        this.secrets,
      );
      this.clients.set(key, client);
    } else {
      // A target first seen (a reload's): its admission settings replace the running ones.
      client.configure(target.admission);
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
