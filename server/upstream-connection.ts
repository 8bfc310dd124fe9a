/**
 * Which connection an upstream request went out on, and whether that connection had carried an
 * earlier response: what decides whether a request that failed before its response may be sent
 * once more (upstream.ts).
 *
 * undici tells a handler nothing about its connection, and how a reused connection that the
 * server closed fails depends on timing: a close seen before or after the request was written is
 * a SocketError with the socket's byte counts ('other side closed', 'closed'), but a reset that
 * meets a body still being written (a request of a few MB: the server closed the idle connection
 * as it left, or this process was stalled past the server's keep-alive timer) is the socket's
 * raw ECONNRESET or EPIPE, with nothing about the socket. Neither says whether the connection was
 * fresh, and the same codes on a fresh connection mean that the server refused this request.
 *
 * So the pools make their clients here (Pool's `factory`): each client records the socket its
 * connector opened, counts the response heads received on it, and keeps the last response's
 * `Keep-Alive` header and when that response ended; the dispatch options of a request are the key
 * that ties its handler to the client (a pool hands a request's options to its client as they
 * are).
 *
 * Why undici's own use of that header does not prevent the race: undici believes a server's
 * `Keep-Alive: timeout=N` and closes the idle connection itself N s less its
 * keepAliveTimeoutThreshold (2 s) after the response, or never reuses it when that leaves
 * nothing; and before it writes a request to an idle connection it yields once to the loop's
 * check phase, so that a close already pending on it is read first. But the close is a timer on
 * this process's loop, and timers run only between the loop's phases; and the check phase comes
 * right after the poll that delivered the work now running. A stretch of synchronous work (a long
 * history parsed, a loaded box giving this process a fraction of a core) that starts before
 * undici's deadline and ends by dispatching a request hands that request the expired connection:
 * the server's close arrived during the stretch and is read on the next turn, after the request
 * was written. When the loop stalls again after writing it, that close is read past
 * REPLAY_WINDOW_MS, and only the idle time (ConnectionProbe.unanswered) still proves that the
 * server never read the request.
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type buildConnector, Client, type Dispatcher, Pool } from 'undici';

/**
 * How long after its request's last byte left a close or reset still counts as the keep-alive
 * race: the server's close was on its way as the request left, and arrives within a round trip
 * (well under a millisecond on a LAN, a few within a region, ~100 ms across the world), plus
 * however late this process's loop reads it (up to ~80 ms measured on a 2-core box running eight
 * test suites). A close later than this, with no byte of a response, is the upstream (or a
 * balancer in front of it) dropping a request it had read and worked on: never sent again, unless
 * the connection had been idle past the keep-alive timeout its server announced (the second
 * proof, ConnectionProbe.unanswered). The price of the bound: a loop stalled longer than this
 * right after the request left turns a replay into a 502 when the server announced no timeout
 * (uvicorn, hence vLLM) or the connection had been idle less; the work a wrongly replayed request
 * could repeat is at most this long.
 */
export const REPLAY_WINDOW_MS = 250;

/** One client's current connection: undici's Client holds one socket at a time. */
export interface Connection {
  socket: Socket | null;
  /** Response heads received on `socket` (reset when the client opens a new one). */
  heads: number;
  /** The `Keep-Alive` header of the last response head on `socket` (its idle timeout). */
  keepAlive: string | undefined;
  /** When the last response on `socket` ended (performance.now()), set only under a `keepAlive`. */
  idleSince: number;
}

/** A Client that lets a request's handler find its connection (see ConnectionProbe). */
class ProbedClient extends Client {
  constructor(
    origin: URL,
    options: Client.Options,
    private readonly connection: Connection,
  ) {
    super(origin, options);
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const probe = probes.get(opts);
    if (probe) {
      probe.connection = this.connection;
      // A pool hands its clients the handler in undici's older (callback) form, which is told when
      // the request's last byte was written; the newer form is not.
      if (isLegacyHandler(handler)) handler = new SentProbe(handler, probe) as never;
    }
    return super.dispatch(opts, handler);
  }
}

const probes = new WeakMap<Dispatcher.DispatchOptions, ConnectionProbe>();

/** undici's callback handler, as a pool hands it to its clients. */
interface LegacyHandler {
  onConnect(abort: (err?: Error) => void, context?: object): void;
  onError(err: Error): void;
  onUpgrade?(statusCode: number, headers: unknown, socket: unknown): void;
  onResponseStarted?(): void;
  onHeaders?(statusCode: number, headers: unknown, resume: () => void, statusText: string): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: unknown): void;
  onBodySent?(chunk: unknown): void;
  onRequestSent?(): void;
}

function isLegacyHandler(h: object): h is LegacyHandler {
  const o = h as Partial<LegacyHandler> & { onRequestStart?: unknown };
  return (
    typeof o.onConnect === 'function' && typeof o.onError === 'function' && o.onRequestStart === undefined
  );
}

/** The handler as it was, plus the moment its request's last byte was written (ConnectionProbe.sent). */
class SentProbe implements LegacyHandler {
  constructor(
    private readonly inner: LegacyHandler,
    private readonly probe: ConnectionProbe,
  ) {}
  onConnect(abort: (err?: Error) => void, context?: object): void {
    this.inner.onConnect(abort, context);
  }
  onError(err: Error): void {
    this.inner.onError(err);
  }
  onUpgrade(statusCode: number, headers: unknown, socket: unknown): void {
    this.inner.onUpgrade?.(statusCode, headers, socket);
  }
  onResponseStarted(): void {
    this.inner.onResponseStarted?.();
  }
  onHeaders(statusCode: number, headers: unknown, resume: () => void, statusText: string): boolean {
    return this.inner.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }
  onData(chunk: Buffer): boolean {
    return this.inner.onData?.(chunk) ?? true;
  }
  onComplete(trailers: unknown): void {
    this.inner.onComplete?.(trailers);
  }
  onBodySent(chunk: unknown): void {
    this.inner.onBodySent?.(chunk);
  }
  onRequestSent(): void {
    this.probe.sent();
    this.inner.onRequestSent?.();
  }
}

/** Pool's `factory`: a ProbedClient whose connector records the socket it opens. */
export function probedClient(origin: URL, opts: object): Dispatcher {
  const options = opts as Client.Options;
  const connection: Connection = { socket: null, heads: 0, keepAlive: undefined, idleSince: 0 };
  const connect = options.connect as buildConnector.connector;
  return new ProbedClient(
    origin,
    {
      ...options,
      connect: (o, callback) =>
        connect(o, (...args: Parameters<buildConnector.Callback>) => {
          if (args[1]) {
            connection.socket = args[1];
            connection.heads = 0;
            connection.keepAlive = undefined;
          }
          callback(...args);
        }),
    },
    connection,
  );
}

/** BalancedPool's `factory`: Pools of ProbedClients. */
export function probedPool(origin: URL, opts: object): Dispatcher {
  return new Pool(origin, { ...(opts as Pool.Options), factory: probedClient });
}

/**
 * One attempt's view of its connection, filled as undici goes: the client it was dispatched to,
 * then, as its request is written, the socket and how much had been read on it.
 */
export class ConnectionProbe {
  connection: Connection | undefined;
  private socket: Socket | null = null;
  private headsBefore = 0;
  private readBefore = 0;
  /** The peer had closed its side before this request was written. */
  private peerClosedBefore = false;
  /** When the request's last byte left this process (performance.now()); unset before. */
  private sentAt: number | undefined;
  /** The idle timeout the server announced on the connection's last response (its header). */
  private keepAliveBefore: string | undefined;
  /** How long the connection had been idle when this request was written; NaN when unknown. */
  private idleBefore = Number.NaN;

  constructor(opts: Dispatcher.DispatchOptions) {
    probes.set(opts, this);
  }

  /** The request is being written (the handler's onRequestStart: undici calls it right before). */
  started(): void {
    const c = this.connection;
    this.socket = c?.socket ?? null;
    this.headsBefore = c?.heads ?? 0;
    this.readBefore = this.socket?.bytesRead ?? 0;
    this.peerClosedBefore = this.socket?.readableEnded === true;
    // The clock is read only when the server announced its idle timeout (nothing to prove otherwise).
    if (c !== undefined && c.keepAlive !== undefined && this.headsBefore > 0) {
      this.keepAliveBefore = c.keepAlive;
      this.idleBefore = performance.now() - c.idleSince;
    }
  }

  /**
   * undici wrote the request's last byte: handed to the socket, which may still buffer it (a body
   * of a few MB). It has left once the socket drained.
   */
  sent(): void {
    const socket = this.socket;
    if (socket?.writableNeedDrain) {
      socket.once('drain', () => {
        this.sentAt ??= performance.now();
      });
    } else this.sentAt = performance.now();
  }

  /** Its response head arrived, with this `Keep-Alive` header (or none). */
  answered(keepAlive: string | undefined): void {
    const c = this.connection;
    if (c && c.socket === this.socket) {
      c.heads++;
      c.keepAlive = keepAlive;
    }
  }

  /** Its response ended: the connection is idle from now (timed only when its server said how long it waits). */
  ended(): void {
    const c = this.connection;
    if (c && c.socket === this.socket && c.keepAlive !== undefined) c.idleSince = performance.now();
  }

  /**
   * The request failed on a connection that had carried an earlier response, before a single
   * byte of its own response was read. Why that request never reached the server's application:
   * an HTTP/1.1 server closes a persistent connection without an answer only between requests
   * (its keep-alive timer; RFC 9112 §9.3): a server that reads a request answers it, an error
   * status included. Its close was on its way when the request left (or had already arrived
   * while this process was stalled): the request, or the rest of its body, met a closed socket.
   * This is what browsers and HTTP clients retry, bounded here to closes that prove it (below).
   * On a fresh connection the same failure is the server refusing this very request, and it
   * stays an error; a failure after any byte of the response is the server's answer failing, and
   * stays an error too.
   */
  unanswered(): boolean {
    if (this.socket === null || this.headsBefore === 0 || this.socket.bytesRead !== this.readBefore)
      return false;
    // And the close proves the request was not read: the peer had closed before it was written,
    // it came while the request was still being written, or within a round trip of its last byte.
    if (this.peerClosedBefore || this.sentAt === undefined) return true;
    if (performance.now() - this.sentAt <= REPLAY_WINDOW_MS) return true;
    // Or, however late the close was read (this process stalled after writing), the connection had
    // been idle, before the request was written to it, for at least the idle timeout its server
    // announced on its last response (`Keep-Alive: timeout=N`): the server was entitled to close
    // it between requests, and a close with no byte of an answer is that close. Measured from when
    // this process read the end of that response, which is after the server sent it: the server's
    // own idle time was longer still. The other way round, a stall that delayed that read shortens
    // the measure, and a close that then comes late proves nothing (a 502). What a server closing
    // later than it announces (node waits 1 s more) leaves: a request it read in that second and
    // then dropped unanswered (a crash, a balancer's cut) would be sent again.
    if (this.idleBefore >= keepAliveTimeoutMs(this.keepAliveBefore)) return true;
    // Otherwise the upstream (or a balancer in front) dropped a request it had read: sending it
    // again would run the same generation twice.
    return false;
  }
  /**
   * What a client's error says of a closed connection that was not sent again (unanswered() was
   * false): whether it was fresh or reused, how long it had been idle, how late the close came.
   * The numbers that tell the upstream dropping a request it read from a stall of this process.
   * Undefined on a fresh connection (the server refused this request: "unreachable" says it).
   */
  closeDetail(): string | undefined {
    if (this.socket === null || this.headsBefore === 0) return undefined;
    const parts = [
      `on a connection reused after ${this.headsBefore} response${this.headsBefore === 1 ? '' : 's'}`,
    ];
    if (!Number.isNaN(this.idleBefore))
      parts.push(`idle ${Math.round(this.idleBefore)} ms before it (announced: ${this.keepAliveBefore})`);
    const read = this.socket.bytesRead - this.readBefore;
    if (read > 0) parts.push(`after ${read} bytes of its answer`);
    else if (this.sentAt !== undefined)
      parts.push(
        `${Math.round(performance.now() - this.sentAt)} ms after the request was sent, no byte answered`,
      );
    return parts.join(', ');
  }
}

/** `timeout=N` (seconds) of a `Keep-Alive` header, in ms; NaN when absent or 0 (RFC 9112 §9.3's hint). */
export function keepAliveTimeoutMs(header: string | undefined): number {
  if (header === undefined) return Number.NaN;
  const m = KEEP_ALIVE_TIMEOUT.exec(header);
  const seconds = m ? Number(m[1]) : 0;
  return seconds > 0 ? seconds * 1000 : Number.NaN;
}

const KEEP_ALIVE_TIMEOUT = /(?:^|[\s,;])timeout\s*=\s*"?(\d{1,9})(?![\d.])/i;

/** Codes of a connection closed or reset under a request (undici's own, or the socket's raw one). */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export function isClosedConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CLOSED_CODES.has(code);
}
