/**
 * A writer waiting for `drain` must also stop on `close`: a client that went away never
 * drains, and the relay loop would hang for good, holding its upstream body.
 */
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { untilDrainOrClose } from '../../server/drain.js';

describe('untilDrainOrClose', () => {
  it('resolves when the client goes away while the socket buffer is full', async () => {
    let settled: Promise<'released'> | undefined;
    let writes = 0;
    const server = createServer((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = Buffer.alloc(64 * 1024, 97);
      while (res.write(chunk)) writes++;
      settled = untilDrainOrClose(res).then(() => 'released' as const);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const req = httpRequest({ port, host: '127.0.0.1', path: '/' }, (res) => {
      res.pause(); // never read: the server's buffer stays full
      setTimeout(() => req.destroy(), 100);
    });
    req.on('error', () => undefined);
    req.end();
    while (!settled) await new Promise((r) => setTimeout(r, 10));
    const result = await Promise.race([
      settled,
      new Promise((r) => setTimeout(() => r('still waiting'), 5_000)),
    ]);
    expect(result).toBe('released');
    expect(writes).toBeGreaterThanOrEqual(0);
    server.close();
  });

  it('resolves at once on an already closed response', async () => {
    const { PassThrough } = await import('node:stream');
    const s = new PassThrough();
    s.destroy();
    await expect(untilDrainOrClose(s)).resolves.toBeUndefined();
  });
});
