/**
 * The server's client connections, so that closing the app cuts the ones that never carried a
 * byte. A client that aborts a request (fetch, the SDKs with an AbortSignal) leaves behind a
 * connection it opened and never wrote to. Node counts it as active, not idle (it waits for its
 * first request), so `closeIdleConnections()` leaves it and `close()` waited for the client to
 * drop it (undici: ~4 s) or for the shutdown deadline. The app's preClose hook calls closing(),
 * so every app.close() (the graceful shutdown's, a reload's test, a test's) gets it.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often a closing server looks again (a connection accepted as the close began). */
const RECUT_MS = 20;

export class Connections {
  private readonly open = new Set<Socket>();

  constructor(private readonly server: Server) {
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

  /**
   * The server is closing: cut the unused connections now, and again until it has closed (one
   * accepted as the close began has no byte yet either; the listener stops accepting soon).
   */
  closing(): void {
    this.cutUnused();
    const again = setInterval(() => this.cutUnused(), RECUT_MS);
    again.unref();
    this.server.once('close', () => clearInterval(again));
  }
}
