/**
 * The server's client connections, so that a shutdown can cut the ones that never carried a
 * byte. A client that aborts a request (fetch, the SDKs with an AbortSignal) leaves behind a
 * connection it opened and never wrote to. Node counts it as active, not idle (it waits for its
 * first request), so `closeIdleConnections()` leaves it and `close()` waited for the client to
 * drop it (undici: ~4 s) or for the shutdown deadline.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export class Connections {
  private readonly open = new Set<Socket>();

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.open.add(socket);
      socket.on('close', () => this.open.delete(socket));
    });
  }

  /** Destroys the connections that have neither read nor written a byte; how many. */
  cutUnused(): number {
    let cut = 0;
    for (const socket of this.open) {
      if (socket.bytesRead === 0 && socket.bytesWritten === 0) {
        socket.destroy();
        cut++;
      }
    }
    return cut;
  }
}
