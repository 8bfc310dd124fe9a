/**
 * TOOLPROOF_WORKERS > 1: the Responses state (server/front-doors/responses/item-store.ts) stays in
 * the memory of the worker that made it, and a request that needs it is carried to that worker.
 *
 * Each id a worker makes for kept state (`resp_`, `conv_`, `msg_`, `fc_`, ...; stateId below)
 * starts with its worker number: four hex digits where the id's random hex began, so the id keeps
 * its prefix, length and alphabet. A front door says which id a request needs (FrontDoor.heldBy:
 * previous_response_id, conversation, an item_reference, the {id} of the path); when that id names
 * another live worker, the receiving worker sends the request as it came (method, path, headers,
 * the body it already read) to that worker's private socket and pipes the answer back, streamed
 * as it goes. The owner runs it as any request: its key check, limits, metrics, log line and
 * capture are its own, so a key reads only its own state and the request counts once. A request
 * that came in on the private socket is never relayed again.
 *
 * Why a relay and not a fetch of the state over IPC: every operation (a turn that reads a chain
 * and keeps its answer, an item deleted, a stream resumed) then runs where the state is, as with
 * one worker, with no second copy to keep in step, and a stream never passes through the primary.
 *
 * The private sockets are Unix sockets in a directory the primary makes (mode 0700) and removes;
 * the primary tells every worker which workers serve. An id of a worker that no longer serves (it
 * restarted: its state is gone), of another replica, or made before a restart, is answered where
 * it arrived: the same 404 or 400 as with one worker; so is a request whose worker exits before
 * its answer began, and a stream it leaves unfinished ends with its door's error events
 * (FrontDoor.relayedStream; TP_ERR_WORKER_GONE), never a 500 nor a cut connection. A relay holds one chunk at a time
 * (backpressure both ways), the body it sends is the one already read within the body limit,
 * and its waits are the owner's: the owner bounds the request with its own timeouts and answers
 * with its error when one passes, so the relay adds none but the connect.
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import {
  maxHeaderSize as httpMaxHeaderSize,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request as httpRequest,
} from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ToolproofError } from '../protocol/errors.js';
import type { Metrics } from './metrics.js';
import type { OpenStreams } from './open-streams.js';
import { WORKER_MARK } from './group-admission.js';
import { HOP_BY_HOP_HEADERS } from './hop-by-hop.js';
import { markRelayed, PLACED_BYTES, RELAYED_FOR, relayedHere } from './relayed.js';
import { REQUEST_ID_HEADER } from './request-id.js';

/** The directory of the workers' private sockets, set by the primary in each worker it forks. */
const RELAY_DIR = 'TOOLPROOF_CLUSTER_RELAY_DIR';
/** Header bytes the relay may add to a request (RELAYED_FOR, the request id, a traceparent, Host). */
const RELAY_HEADER_ROOM = 1024;
/**
 * How long a worker waits for another's answer to a question (ask: the items a request's
 * item_references name): past it, what it asked for is missing, as an item evicted is.
 */
export const ASK_WAIT_MS = 2_000;
/** How many hex digits of an id name its worker. */
const TAG_HEX = 4;
const TAG = /^[A-Za-z]+_([0-9a-f]{4})/;

/** This worker's number, when it is a worker of toolproof's own cluster; undefined otherwise. */
const self =
  cluster.isWorker && process.env[WORKER_MARK] === '1' && process.env[RELAY_DIR]
    ? cluster.worker?.id
    : undefined;

const tagOf = (worker: number) => (worker & 0xffff).toString(16).padStart(TAG_HEX, '0');

/**
 * An id for kept state: `prefix_` and `hex` hex digits, the first four naming this worker in a
 * cluster (random otherwise).
 */
export function stateId(prefix: string, hex: number): string {
  const random = randomBytes(Math.ceil(hex / 2))
    .toString('hex')
    .slice(0, hex);
  return self === undefined ? `${prefix}_${random}` : `${prefix}_${tagOf(self)}${random.slice(TAG_HEX)}`;
}

// IPC (primary -> workers): the workers that serve now.
interface Peers {
  tp: 'relay:peers';
  workers: number[];
}
const isPeers = (m: unknown): m is Peers =>
  typeof m === 'object' && m !== null && (m as { tp?: unknown }).tp === 'relay:peers';

/**
 * The primary's side: the sockets' directory (its env for each fork), and the workers that serve,
 * told to each of them whenever that changes.
 */
export function serveRelay(): {
  env: Record<string, string>;
  changed(serving: ReadonlySet<number>): void;
  exited(worker: number): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'toolproof-relay-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return {
    env: { [RELAY_DIR]: dir },
    changed(serving) {
      const message: Peers = { tp: 'relay:peers', workers: [...serving] };
      for (const worker of Object.values(cluster.workers ?? {}))
        if (worker && serving.has(worker.id) && worker.isConnected()) worker.send(message);
    },
    exited(worker) {
      // One killed leaves its socket file: connecting to it is refused either way.
      try {
        unlinkSync(join(dir, `${worker}.sock`));
      } catch {
        // closed cleanly: node removed it
      }
    },
  };
}

/** Headers that belong to one connection, not to the request or answer carried. */
const HOP_BY_HOP = new Set<string>([...HOP_BY_HOP_HEADERS, 'expect', 'proxy-authorization']);
/** Headers of the client's request that describe its body or its answer, not a question's (ask). */
const ASK_OWN = new Set([
  'content-length',
  'content-encoding',
  'content-type',
  'accept-encoding',
  'traceparent',
  'tracestate',
  REQUEST_ID_HEADER,
]);

/**
 * A front door's watch of a stream another worker answers (FrontDoor.relayedStream): it sees each
 * chunk as it passes, and writes the API's events that end the stream when that worker exits
 * before its end.
 */
export interface RelayedStreamWatch {
  push(chunk: Buffer): void;
  fail(err: ToolproofError): string;
}

/** What the relay uses of the app's state (AppState has it). */
export interface RelayDeps {
  metrics: Pick<Metrics, 'responsesRelayed'>;
  openStreams: OpenStreams;
  relay?: WorkerRelay;
}

/** A worker's side: its private socket, the workers that serve, and the relay itself. */
export class WorkerRelay {
  private peers = new Map<string, number>();

  private constructor(
    private readonly dir: string,
    private readonly server: Server,
    private readonly state: RelayDeps,
  ) {
    process.on('message', (m: unknown) => {
      if (!isPeers(m)) return;
      this.peers = new Map(m.workers.filter((w) => w !== self).map((w) => [tagOf(w), w]));
    });
  }

  /**
   * In a worker of toolproof's cluster: listen on this worker's private socket, whose requests
   * the app serves as any other (marked relayed), and relay from now on. Undefined elsewhere.
   */
  static async join(app: FastifyInstance, state: RelayDeps): Promise<WorkerRelay | undefined> {
    const dir = process.env[RELAY_DIR];
    if (self === undefined || !dir) return undefined;
    const server = createServer((socket: Socket) => {
      markRelayed(socket);
      // The app's own server takes it: its timeouts, its connection bookkeeping, its shutdown.
      // With room for the headers the relay adds (x-toolproof-relayed-for, the request id, a
      // traceparent, Host): a client's headers just under the limit passed the worker it reached
      // and were a 431 here. Node reads the limit as the connection starts (synchronously, in
      // this emit); the public connections keep theirs.
      // (node's own field, undeclared in its types: `|| 0` is the process's default there too).
      const http = app.server as typeof app.server & { maxHeaderSize?: number };
      const own = http.maxHeaderSize;
      http.maxHeaderSize = (own || httpMaxHeaderSize) + RELAY_HEADER_ROOM;
      try {
        http.emit('connection', socket);
      } finally {
        http.maxHeaderSize = own;
      }
    });
    const path = join(dir, `${self}.sock`);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // exclusive: this worker's own listener, not one the cluster's primary shares out.
        server.listen({ path, exclusive: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      // No Unix sockets here (or the directory is gone): the worker serves, its state its own.
      app.log.warn(
        { err: { message: (err as Error).message }, path },
        "worker relay: cannot listen on this worker's private socket; Responses state made here is answered only by this worker",
      );
      return undefined;
    }
    // A failed accept (out of file descriptors) is the relaying worker's to see, not a crash here.
    server.on('error', (err) =>
      app.log.warn({ err: { message: err.message } }, 'worker relay: accept failed'),
    );
    const relay = new WorkerRelay(dir, server, state);
    state.relay = relay;
    return relay;
  }

  /** Stops taking relayed requests (the shutdown); those open finish on their connections. */
  close(): void {
    this.server.close();
  }

  /** The live worker, other than this one, whose id `id` is; undefined when none. */
  ownerOf(id: string): number | undefined {
    const tag = TAG.exec(id)?.[1];
    return tag === undefined ? undefined : this.peers.get(tag);
  }

  /** Whether `id` was made by this worker. */
  mine(id: string): boolean {
    return self !== undefined && TAG.exec(id)?.[1] === tagOf(self);
  }

  /**
   * Asks worker `worker` a question on its private socket: POST `path` with `payload` (JSON) and
   * the client's own headers (its key: the worker answers only what that key may read), for its
   * JSON answer. Undefined when the worker is not reached, answers other than 200, answers more
   * than `maxBytes`, or does not answer within ASK_WAIT_MS: never a wait past it.
   */
  ask(
    request: FastifyRequest,
    worker: number,
    path: string,
    payload: string,
    maxBytes: number,
  ): Promise<unknown> {
    const counted = this.state.metrics.responsesRelayed;
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name) && !ASK_OWN.has(name)) headers[name] = value;
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
    headers[REQUEST_ID_HEADER] = request.id;
    headers[RELAYED_FOR] = request.socket?.remoteAddress ?? '';
    // Tracing on: the worker's span for the question is a child of this request's, not a trace of its own.
    request.tpSpan?.inject(headers as Record<string, string>);
    return new Promise((resolve) => {
      let done = false;
      const finish = (answer: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        out.destroy();
        counted.labels(answer === undefined ? 'unanswered' : 'asked').inc();
        resolve(answer);
      };
      const timer = setTimeout(() => finish(undefined), ASK_WAIT_MS);
      const out = httpRequest(
        { socketPath: join(this.dir, `${worker}.sock`), method: 'POST', path, headers, agent: false },
        (res) => {
          if (res.statusCode !== 200) return finish(undefined);
          const chunks: Buffer[] = [];
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.byteLength;
            if (bytes > maxBytes) finish(undefined);
            else chunks.push(chunk);
          });
          res.once('end', () => {
            try {
              finish(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch {
              finish(undefined);
            }
          });
          res.once('error', () => finish(undefined));
        },
      );
      out.once('error', () => finish(undefined));
      out.end(payload);
    });
  }

  /**
   * Sends the request to worker `owner` and pipes its answer back. Resolves false when the owner
   * could not be reached (it has just gone: the request is then answered here, as not held).
   */
  async forward(
    request: FastifyRequest,
    reply: FastifyReply,
    owner: number,
    watch?: (request: FastifyRequest) => RelayedStreamWatch,
  ): Promise<boolean> {
    const counted = this.state.metrics.responsesRelayed;
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    // The body as read: decoded, within the body limit.
    delete headers['content-length'];
    delete headers['content-encoding'];
    const body = request.rawBody;
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    headers[REQUEST_ID_HEADER] = request.id;
    headers[RELAYED_FOR] = request.socket?.remoteAddress ?? '';
    // Always this worker's word (a client's own header is replaced): what it placed in the body.
    headers[PLACED_BYTES] = String(request.tpPlaced ?? 0);
    // Tracing on: the owner's server span is a child of this worker's, not its sibling under the
    // client's span (one trace read as two requests).
    const span = request.tpSpan;
    if (span) {
      const trace: Record<string, string> = {};
      span.inject(trace);
      delete headers.traceparent;
      delete headers.tracestate;
      Object.assign(headers, trace);
    }
    const out = httpRequest({
      socketPath: join(this.dir, `${owner}.sock`),
      method: request.method,
      path: request.url,
      headers,
      // A connection per request: no idle pooled socket the owner may close as it is reused.
      agent: false,
    });
    let clientLeft = false;
    let res: IncomingMessage | undefined;
    const client = reply.raw;
    const onClientClose = () => {
      if (res?.complete || res?.destroyed) return;
      clientLeft = true;
      out.destroy();
    };
    client.once('close', onClientClose);
    // From now on the owner counts and logs it: a client that leaves while the owner works is
    // the owner's abort, not one here too.
    request.tpRelayed = owner;
    const answered = await new Promise<IncomingMessage | Error>((resolve) => {
      out.once('response', resolve);
      out.once('error', resolve);
      out.end(body);
    });
    if (answered instanceof Error) {
      client.off('close', onClientClose);
      if (clientLeft) {
        counted.labels('relayed').inc();
        reply.hijack();
        return true;
      }
      // Answered here, by the route, as not held: the owner has just gone (refused, no socket),
      // or went before its answer began (killed, crashed: the connection closed without an
      // answer). Its state went with it, so this is the answer a restarted worker gives (404, or
      // the 400 naming previous_response_id), never a 500: the exit is not toolproof's bug here,
      // and the request's own answer never began, so nothing is answered twice.
      request.tpRelayed = undefined;
      const code = (answered as NodeJS.ErrnoException).code;
      counted.labels(code === 'ECONNREFUSED' || code === 'ENOENT' ? 'unreachable' : 'broken').inc();
      return false;
    }
    res = answered;
    reply.hijack();
    const back: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(res.headers))
      if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
    client.writeHead(res.statusCode ?? 502, back);
    // At the shutdown deadline the owner ends its stream with its own API's event: give it the
    // flush time to come through (openStreams bounds the wait) before the connection is cut.
    this.state.openStreams.claim(client, {
      counted: false,
      abortWithError: () =>
        new Promise((resolve) => (client.closed ? resolve() : client.once('close', resolve))),
    });
    const from = res;
    // A stream the door watches: when the owner exits mid-way, it ends with the door's error
    // events rather than a cut connection (a client reads the API's failure, not a network error).
    const streamed =
      watch !== undefined && /^text\/event-stream/i.test(String(res.headers['content-type'] ?? ''));
    const seen = streamed ? watch(request) : undefined;
    let ended = false;
    const end = (err: Error | undefined) => {
      if (ended) return;
      ended = true;
      const broken = !clientLeft && !from.complete;
      counted.labels(broken ? 'broken' : 'relayed').inc();
      if (!broken) return;
      if (seen === undefined || client.destroyed || client.writableEnded) {
        client.destroy();
        return;
      }
      client.end(
        seen.fail(
          new ToolproofError('TP_ERR_WORKER_GONE', {
            message: `The toolproof worker that held this response (worker ${owner}) exited before the stream's end; the response and its state went with it.`,
            ...(err ? { cause: err } : {}),
          }),
        ),
      );
    };
    if (seen === undefined) {
      pipeline(from, client, (err) => end(err ?? undefined));
      return true;
    }
    // By hand, so that a failure of `from` leaves `client` open for the error events.
    from.on('data', (chunk: Buffer) => {
      // A client gone meanwhile: nothing to write to (its close cancels the relay: onClientClose).
      if (client.destroyed || client.writableEnded) return;
      seen.push(chunk);
      if (!client.write(chunk)) from.pause();
    });
    client.on('drain', () => from.resume());
    from.once('end', () => {
      if (from.complete) {
        ended = true;
        counted.labels('relayed').inc();
        client.end();
      }
    });
    from.once('error', (err) => end(err));
    from.once('close', () => end(undefined));
    return true;
  }
}

/**
 * A front door's gathering of the state a request names on workers other than the one that serves
 * it (`target`; undefined: this one): asked of them (WorkerRelay.ask) and placed in the request
 * (its body, and its rawBody when it is relayed) before it is served.
 */
export type GatherHeld = (
  request: FastifyRequest,
  relay: WorkerRelay,
  target: number | undefined,
) => Promise<void>;

/**
 * The preHandler of a front door that keeps state: a request whose state (`heldBy`) another live
 * worker holds is answered by that worker. Runs after the key check and the body's parse and
 * validation, before the request counts against its key or goes upstream.
 */
export function relayToOwner(
  state: RelayDeps,
  heldBy: (request: FastifyRequest) => string | undefined,
  watch?: (request: FastifyRequest) => RelayedStreamWatch,
  gather?: GatherHeld,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const relay = state.relay;
    if (relay === undefined || relayedHere(request)) return;
    const id = heldBy(request);
    const owner = id === undefined ? undefined : relay.ownerOf(id);
    // State it names beyond the first id, held by other workers: placed in the request first.
    if (gather) await gather(request, relay, owner);
    if (owner !== undefined) await relay.forward(request, reply, owner, watch);
  };
}
