/**
 * Raw HTTP/1.1 upstreams over `net` for the connection-level tests (stale keep-alive replays):
 * node's http server would announce its keep-alive in a header, which undici believes, and could
 * not reset a connection at a chosen byte.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

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

/** A chat answer as raw bytes, with its Content-Length. */
export function okResponse(id: string): string {
  const body = JSON.stringify({
    id,
    object: 'chat.completion',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    data: [],
  });
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
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
