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
 * connector opened and counts the response heads received on it; the dispatch options of a
 * request are the key that ties its handler to the client (a pool hands a request's options to
 * its client as they are).
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
 * balancer in front of it) dropping a request it had read and worked on: never sent again. The
 * price of the bound: a loop stalled longer than this right after the request left turns a
 * replay into a 502; the work a wrongly replayed request could repeat is at most this long.
 */
export const REPLAY_WINDOW_MS = 250;

/** One client's current connection: undici's Client holds one socket at a time. */
export interface Connection {
  socket: Socket | null;
  /** Response heads received on `socket` (reset when the client opens a new one). */
  heads: number;
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
  const connection: Connection = { socket: null, heads: 0 };
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

  /** Its response head arrived. */
  answered(): void {
    if (this.connection && this.connection.socket === this.socket) this.connection.heads++;
  }

  /**
   * The request failed on a connection that had carried an earlier response, before a single
   * byte of its own response was read. Why that request never reached the server's application:
   * an HTTP/1.1 server closes a persistent connection without an answer only between requests
   * (its keep-alive timer; RFC 9112 §9.3): a server that reads a request answers it, an error
   * status included. Its close was on its way when the request left (or had already arrived
   * while this process was stalled): the request, or the rest of its body, met a closed socket.
   * This is what browsers and HTTP clients retry, bounded here to closes that prove it (below). On a fresh connection the same failure is the
   * server refusing this very request, and it stays an error; a failure after any byte of the
   * response is the server's answer failing, and stays an error too.
   */
  unanswered(): boolean {
    if (this.socket === null || this.headsBefore === 0 || this.socket.bytesRead !== this.readBefore)
      return false;
    // And the close proves the request was not read: the peer had closed before it was written,
    // it came while the request was still being written, or within a round trip of its last byte.
    // Later, the upstream (or a balancer in front) dropped a request it had read: sending it
    // again would run the same generation twice.
    if (this.peerClosedBefore || this.sentAt === undefined) return true;
    return performance.now() - this.sentAt <= REPLAY_WINDOW_MS;
  }
}

/** Codes of a connection closed or reset under a request (undici's own, or the socket's raw one). */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export function isClosedConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CLOSED_CODES.has(code);
}
