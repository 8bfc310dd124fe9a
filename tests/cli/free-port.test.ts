import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/toolproof-process.js';

// The port a test hands a child process (`toolproof launch --url`, a cluster's primary) is free
// until that process binds it. A port from `listen(0)` could be handed out again meanwhile, to a
// server of another test file in a parallel worker: CI saw `toolproof launch` meet another
// test's toolproof at "its" port and exit 0 where 1 was expected.
describe('freePort', () => {
  it('never returns a port the kernel hands out for port 0, and the port is free', async () => {
    let low = 32_768;
    try {
      low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
    } catch {}
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(low);
      await new Promise<void>((resolve, reject) => {
        const srv = createServer();
        srv.once('error', reject);
        srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
      });
    }
  });
});
