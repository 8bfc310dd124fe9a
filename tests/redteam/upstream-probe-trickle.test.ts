/**
 * The backend probes (server/capability-probe.ts: /props and /v1/models, asked before the server
 * listens and again at each reload, before the swap) against an upstream that answers and then
 * trickles its body: one byte every 0.5 s. undici's bodyTimeout is the longest silence between
 * two chunks, so each byte reset it and the probe read on until its 1 MiB limit (six days): the
 * start-up never listened and a reload never swapped. Now a probe ends within its 3 s. The
 * admission's slot probe (concurrency auto: llama-server's total_slots) alike, within its 5 s: a
 * probe that never ended was never asked again, and the replica never got its slot count.
 * The three wait side by side (concurrent): the file takes one probe's time.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { refusalFetcher } from '../../server/capability-probe.js';
import { UpstreamClient } from '../../server/upstream.js';

/** An upstream answering `status` and then a byte every 0.5 s; `close` ends it. */
async function trickling(status: number): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write('{');
    const timer = setInterval(() => res.write(' '), 500);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** What `p` resolved to and when, or 'still reading' past `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<{ value: T | 'still reading'; ms: number }> {
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still reading'>((r) => {
    timer = setTimeout(() => r('still reading'), ms);
  });
  const value = await Promise.race([p, late]);
  clearTimeout(timer);
  return { value, ms: Date.now() - t0 };
}

describe.concurrent('backend probes against a trickling upstream', () => {
  it('a /props whose body trickles ends as unknown within the probe time', async () => {
    const up = await trickling(200);
    const got = await within(refusalFetcher(() => {})(`${up.base}/props`), 8000).finally(() => up.close());
    expect(got.value).toBeUndefined();
    expect(got.ms).toBeLessThan(6000);
  }, 15_000);

  it('a 401 whose body trickles is still said (the key it wants), within the probe time', async () => {
    const up = await trickling(401);
    const refused: number[] = [];
    const fetcher = refusalFetcher((r) => refused.push(r.status));
    const got = await within(fetcher(`${up.base}/v1/models`), 8000).finally(() => up.close());
    expect(got.value).toBeUndefined();
    expect(got.ms).toBeLessThan(6000);
    expect(refused).toEqual([401]);
  }, 15_000);

  it("the admission's slot probe ends as unknown within its 5 s", async () => {
    const up = await trickling(200);
    const client = new UpstreamClient(
      { urls: [`${up.base}/v1`] },
      { connectMs: 2000, firstByteMs: 5000, idleMs: 5000 },
    );
    const probe = client as unknown as { probeSlots(origin: string, scale: number): Promise<unknown> };
    const got = await within(probe.probeSlots(up.base, 1), 9000).finally(async () => {
      await client.destroy();
      await up.close();
    });
    expect(got.value).toBeUndefined();
    expect(got.ms).toBeLessThan(8000);
  }, 15_000);
});
