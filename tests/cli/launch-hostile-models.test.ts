/**
 * `toolproof launch` reads GET /v1/models from whatever answers --url (a squatted port, a remote
 * host): its answer is untrusted. A page repeating one id 40,000 times (440 KB) held the launcher
 * 64 s of CPU (each entry copied the id's list so far), and an endless body was read whole into
 * memory (res.text(), GBs at loopback speed within the 15 s timeout). Now the list is built in one
 * pass and the body is read up to 16 MiB. Its /ready (the upstreams toolproof cannot reach) is read up
 * to 1 MiB, and at most 16 of them are named.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readModels } from '../../cli/launch/models.js';
import { fetchModels, readiness } from '../../cli/launch/server.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;

describe('the launcher against a hostile /v1/models', () => {
  it('a page repeating one id 20,000 times is read in well under a second of CPU', async () => {
    const page = JSON.stringify({
      data: Array.from({ length: 20_000 }, (_, i) => ({ id: i % 2 ? 'm' : 'n', upstream_model: 'm' })),
    });
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(page);
    });
    const pages = await fetchModels(base, 'k');
    const c0 = process.cpuUsage();
    const models = readModels(pages);
    // measured before: 64 s for 40,000 entries (minutes for these); after: ~0.1 s
    expect(cpuMs(process.cpuUsage(c0))).toBeLessThan(1500);
    expect(models.map((m) => m.id).sort()).toEqual(['m', 'n']);
  });

  it('reading the list costs about ×4 for a page ×4 as long (one id repeated, names mapped onto it)', () => {
    const s = measureScaling(
      (n) => [
        { data: Array.from({ length: n }, (_, i) => ({ id: i % 2 ? 'm' : `n${i}`, upstream_model: 'm' })) },
      ],
      (pages) => readModels(pages),
      { from: 4_000, max: 200_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('an endless body is refused past 16 MiB, not held whole', async () => {
    const block = Buffer.alloc(1024 * 1024, 0x20);
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[');
      const more = () => {
        while (res.write(block));
      };
      res.on('drain', more);
      more();
    });
    const heap0 = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    await expect(fetchModels(base, 'k')).rejects.toThrow(/over 16 MiB; not a model list/);
    const grown = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers - heap0;
    expect(grown).toBeLessThan(200 * 1024 * 1024);
  }, 20_000);

  it('a /ready listing 10,000 upstreams down names 16 of them, each cut to 500 characters', async () => {
    const upstreams = Array.from({ length: 10_000 }, (_, i) => ({
      upstream: `http://u${i}/v1`,
      ok: false,
      error: 'x'.repeat(i === 0 ? 5_000 : 10),
    }));
    const base = await serve((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'not_ready', upstreams }));
    });
    const r = await readiness(base);
    expect(r.of).toBe(10_000);
    expect(r.downCount).toBe(10_000);
    expect(r.down.length).toBe(16);
    expect(r.down[0]!.problem.length).toBe(500);
  });
});
