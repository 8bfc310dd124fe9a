/**
 * The backend probes (server/capability-probe.ts: /props and /v1/models, asked before the server
 * listens and again at each reload, before the swap) against an upstream that answers and then
 * trickles its body: one byte every 0.5 s. undici's bodyTimeout is the longest silence between
 * two chunks, so each byte reset it and the probe read on until its 1 MiB limit (six days): the
 * start-up never listened and a reload never swapped. Now a probe ends within its 3 s.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { refusalFetcher } from '../../server/capability-probe.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

async function trickling(status: number): Promise<string> {
  server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write('{');
    const timer = setInterval(() => res.write(' '), 500);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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

describe('backend probes against a trickling upstream', () => {
  it('a /props whose body trickles ends as unknown within the probe time', async () => {
    const base = await trickling(200);
    const got = await within(refusalFetcher(() => {})(`${base}/props`), 8000);
    expect(got.value).toBeUndefined();
    expect(got.ms).toBeLessThan(6000);
  }, 15_000);

  it('a 401 whose body trickles is still said (the key it wants), within the probe time', async () => {
    const base = await trickling(401);
    const refused: number[] = [];
    const got = await within(refusalFetcher((r) => refused.push(r.status))(`${base}/v1/models`), 8000);
    expect(got.value).toBeUndefined();
    expect(got.ms).toBeLessThan(6000);
    expect(refused).toEqual([401]);
  }, 15_000);
});
