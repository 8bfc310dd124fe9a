/**
 * How a bench child process serves (the fake upstream, the node hop, the bare proxy): its
 * keep-alive connections outlive the pauses between rounds (node's default is 5 s), it listens on
 * a free loopback port and says `PORT <n>` on stdout (procs.ts waits for that line), and it closes
 * when told (SIGTERM, SIGINT) or when its parent is gone: stdin is a pipe from the parent, which
 * ends even after a kill -9, so a child never lingers.
 */
import type { Server } from 'node:http';

/** Serves `server` as above; `closing` runs once the server closed, before the process exits. */
export function serveChild(server: Server, closing: () => Promise<unknown> = () => Promise.resolve()): void {
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.requestTimeout = 0;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`PORT ${typeof address === 'object' && address ? address.port : 0}\n`);
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => {
      void closing().finally(() => process.exit(0));
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}
