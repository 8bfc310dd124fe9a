/**
 * Graceful shutdown: stop accepting, let open requests and streams finish up to the deadline,
 * then end each stream still open with an SSE error event and `data: [DONE]` (a client sees
 * why it ended, not a reset), and only then cut the remaining connections.
 */
import { ToolproofError } from '../protocol/errors.js';
import type { ToolproofApp } from './app.js';

export interface ShutdownOptions {
  graceMs: number;
  /** After the streams were ended, how long their last bytes may take to flush. */
  flushMs?: number;
}

/** Resolves when the app is closed (all connections gone). */
export function shutdownGracefully(app: ToolproofApp, options: ShutdownOptions): Promise<void> {
  const force = setTimeout(() => {
    // Every open request is registered; only those that are SSE streams get an ending written.
    const open = app.toolproof.openStreams.size;
    app.log.warn({ openRequests: open }, 'shutdown deadline reached: ending open streams and connections');
    const err = new ToolproofError('TP_ERR_SHUTTING_DOWN', {
      message: 'toolproof is shutting down: this stream was ended at the shutdown deadline.',
    });
    void app.toolproof.openStreams.abortAll(err, options.flushMs ?? 1_000).then(() => {
      app.server.closeAllConnections();
      void app.toolproof.upstreams.destroy();
    });
  }, options.graceMs);
  force.unref();
  app.server.closeIdleConnections();
  // A connection that never carried a byte is cut by the app's own preClose (connections.ts).
  return app.close().finally(() => clearTimeout(force));
}

/** One line for a listen failure (port in use, unknown host), instead of a stack trace. */
export function describeListenError(err: unknown, host: string, port: number): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  const where = `${host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the port is already in use (set TOOLPROOF_PORT to another port)`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: the address is not available on this machine (check TOOLPROOF_HOST)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on ${where}: the host name does not resolve (check TOOLPROOF_HOST)`;
    default:
      return `cannot listen on ${where}: ${(err as Error)?.message ?? String(err)}`;
  }
}
