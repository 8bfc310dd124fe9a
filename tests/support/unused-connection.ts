/**
 * A connection that never carried a byte: what an aborted fetch or SDK request leaves behind.
 * Node counts it active, so a close waited for its client to drop it (the app now cuts it itself:
 * server/connections.ts). Shared by tests/server/connections.test.ts (app.close()) and
 * tests/hardening/shutdown-streams.test.ts (the graceful shutdown).
 */
import { type AddressInfo, connect } from 'node:net';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';

/**
 * An app on loopback (its upstream unreachable: nothing is sent there) with one such connection
 * open; `ended` settles when the connection closes.
 */
export async function appWithUnusedConnection(): Promise<{ app: ToolproofApp; ended: Promise<void> }> {
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
    logger: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { app, ended };
}
