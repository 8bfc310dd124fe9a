/**
 * Raw HTTP/1.1 upstreams over `net` for the connection-level tests (stale keep-alive replays):
 * node's http server would announce its keep-alive in a header, which undici believes, and could
 * not reset a connection at a chosen byte.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';

export interface RawUpstream {
  url: string;
  /** Requests that reached the server, with the ordinal of each on its connection (1, 2, ...). */
  seen: Array<{ line: string; nth: number }>;
  connections: number;
  /** Idle connections the server closed itself, and the ones the client closed first. */
  closedByServer: number;
  closedByClient: number;
  close(): Promise<void>;
}

/** A chat answer as raw bytes, with its Content-Length (and `extra` header lines, each ending in CRLF). */
export function okResponse(id: string, extra = ''): string {
  const body = JSON.stringify({
    id,
    object: 'chat.completion',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    data: [],
  });
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A whole request (head and Content-Length body) off the front of `buf`, or undefined for more bytes. */
export function takeRequest(buf: Buffer): { line: string; rest: Buffer } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.subarray(0, end).toString('latin1');
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
  if (buf.length < end + 4 + length) return undefined;
  return { line: head.split('\r\n')[0]!, rest: buf.subarray(end + 4 + length) };
}

/**
 * Reads each whole request off `socket` as it comes, notes it in `up.seen` with its ordinal on the
 * connection, and calls `onRequest(nth)`, which returns false once it closed the socket (the
 * reading stops there); `onChunk` runs first on each chunk read.
 */
function eachRequest(
  socket: Socket,
  up: RawUpstream,
  onRequest: (nth: number) => boolean,
  onChunk?: () => void,
): void {
  let buf: Buffer = Buffer.alloc(0);
  let nth = 0;
  socket.on('data', (d: Buffer) => {
    onChunk?.();
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const req = takeRequest(buf);
      if (!req) return;
      buf = req.rest;
      nth++;
      up.seen.push({ line: req.line, nth });
      if (!onRequest(nth)) return;
    }
  });
}

/** A net server on loopback that counts and tracks its connections; `onSocket` speaks HTTP. */
export async function listenRaw(onSocket: (socket: Socket, up: RawUpstream) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const up: RawUpstream = {
    url: '',
    seen: [],
    connections: 0,
    closedByServer: 0,
    closedByClient: 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer((socket) => {
    up.connections++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    onSocket(socket, up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return up;
}

/**
 * A minimal HTTP/1.1 upstream over net. `answer(nth)` says whether the nth request on a
 * connection is answered (true) or met by a close, as a server closing an idle connection does
 * (false), or by these first bytes of a response and a close (a string: the server had read it);
 * `idleMs` closes a connection idle that long after an answer; `head`: header lines added to each
 * answer (e.g. a `keep-alive: timeout=N`, which undici believes).
 */
export async function rawUpstream(
  answer: (nth: number) => boolean | string,
  idleMs?: number,
  head = '',
): Promise<RawUpstream> {
  return listenRaw((socket, up) => {
    socket.on('end', () => {
      up.closedByClient++;
      socket.end();
    });
    let idle: NodeJS.Timeout | undefined;
    // Armed after each answer, never on accept: a server's keep-alive timer runs between requests
    // (node's keepAliveTimeout, uvicorn's timeout_keep_alive), not before a connection's first one.
    // Armed on accept, it closed a fresh connection whenever this thread (the test's, and the
    // toolproof's in it) took longer than `idleMs` from the accept to reading the first request,
    // as on a loaded box: a fresh connection's failure is final (the server refusing the request),
    // so the test saw a 502 that no real server's keep-alive causes.
    const arm = () => {
      clearTimeout(idle);
      if (idleMs !== undefined)
        idle = setTimeout(() => {
          up.closedByServer++;
          socket.end();
        }, idleMs);
    };
    socket.on('close', () => clearTimeout(idle));
    eachRequest(
      socket,
      up,
      (nth) => {
        const answered = answer(nth);
        if (answered !== true) {
          // FIN without a response (the close raced this request), or after a torn head.
          if (answered === false) socket.end();
          else socket.end(answered);
          return false;
        }
        socket.write(okResponse('chatcmpl-ka', head));
        arm();
        return true;
      },
      () => clearTimeout(idle),
    );
  });
}

/**
 * Answers the first request of each connection after `warmMs` (so that concurrent warm-ups each
 * open a connection of their own), with the header lines `head`; on a reused connection, reads
 * the whole request, "generates" for `workMs` and resets the connection.
 */
export async function generatingThenResetting(
  warmMs: number,
  workMs: number,
  head = '',
): Promise<RawUpstream> {
  return listenRaw((socket, up) => {
    eachRequest(socket, up, (nth) => {
      if (nth === 1) setTimeout(() => socket.write(okResponse('chatcmpl-warm', head)), warmMs);
      else
        setTimeout(() => {
          up.closedByServer++;
          socket.resetAndDestroy();
        }, workMs);
      return true;
    });
  });
}

/**
 * A server's keep-alive timer on a thread of its own: a TCP relay in front of `target` that
 * closes each connection (both sides, as a server's idle close does: a request written to it
 * after that meets a reset and never reaches `target`) once `idleMs` passed with no byte either
 * way since the last one from `target`. On its own thread it fires on time while the test's
 * thread (and the toolproof in it) is stalled, as a real upstream's timer does.
 */
export interface IdleClosingRelay {
  url: string;
  /** Connections closed by the timer so far. */
  closed(): number;
  /** Blocks this thread (stalls its loop) until `n` connections were closed, or `timeoutMs`. */
  stallUntilClosed(n: number, timeoutMs: number): void;
  close(): Promise<void>;
}

const RELAY = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const closed = new Int32Array(workerData.shared);
const server = net.createServer((front) => {
  const back = net.connect(workerData.port, '127.0.0.1');
  let timer;
  const end = () => { clearTimeout(timer); front.destroy(); back.destroy(); };
  for (const s of [front, back]) { s.on('error', end); s.on('close', end); }
  front.on('data', (d) => { clearTimeout(timer); back.write(d); });
  back.on('data', (d) => {
    front.write(d);
    clearTimeout(timer);
    timer = setTimeout(() => { end(); Atomics.add(closed, 0, 1); Atomics.notify(closed, 0); }, workerData.idleMs);
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

export async function idleClosingRelay(target: RawUpstream, idleMs: number): Promise<IdleClosingRelay> {
  const shared = new SharedArrayBuffer(4);
  const closed = new Int32Array(shared);
  const worker = new Worker(RELAY, {
    eval: true,
    workerData: { port: Number(new URL(target.url).port), idleMs, shared },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    closed: () => Atomics.load(closed, 0),
    stallUntilClosed(n, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      for (let seen = Atomics.load(closed, 0); seen < n; seen = Atomics.load(closed, 0)) {
        const left = deadline - performance.now();
        if (left <= 0) return;
        Atomics.wait(closed, 0, seen, left);
      }
    },
    close: async () => {
      await worker.terminate();
    },
  };
}
