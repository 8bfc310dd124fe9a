/**
 * Every app.close() cuts the connections that never carried a byte (what an aborted fetch or SDK
 * request leaves behind: Node counts such a connection active, and close() waited for its client
 * to drop it). The app's own preClose hook does it (server/connections.ts), not each caller:
 * a plain close, with no helper around it, ends at once.
 */
import { describe, expect, it } from 'vitest';
import { appWithUnusedConnection } from '../support/unused-connection.js';

describe('app.close()', () => {
  it('does not wait for a connection that never carried a byte', async () => {
    const { app, ended } = await appWithUnusedConnection();
    const started = Date.now();
    const closed = await Promise.race([
      app.close().then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still waiting'), 3_000)),
    ]);
    if (closed !== 'closed') app.server.closeAllConnections();
    expect(closed).toBe('closed');
    await ended;
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
