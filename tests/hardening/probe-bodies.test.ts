/**
 * What toolproof asks a backend by itself (llama-server's /props for its slot count while
 * admission concurrency is `auto`, re-asked on traffic until it answers; /props and /v1/models at
 * start-up) was read whole with undici's `body.json()`: a backend (or whatever answers in its
 * place) sending an endless /props body grew toolproof's heap until the process died. A probe now
 * reads 1 MB at most (server/probe-json.ts) and drops the rest.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { fetchJson } from '../../server/capability-probe.js';
import { PROBE_BODY_LIMIT } from '../../server/probe-json.js';
import { proxyInFrontOf, type Recorded, textCompletion } from '../support/harness.js';

/** Bytes the endless /props wrote before its reader went away (or it gave up at 96 MB). */
let written = 0;
let propsDone: Promise<void> = Promise.resolve();

function endlessProps(res: ServerResponse): void {
  written = 0;
  propsDone = new Promise((resolve) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"total_slots":4,"pad":"');
    const block = Buffer.alloc(64 * 1024, 0x61);
    const more = (): void => {
      while (written < 96 * 1024 * 1024) {
        written += block.length;
        if (!res.write(block)) {
          res.once('drain', more);
          return;
        }
      }
      res.end('"}');
      resolve();
    };
    res.on('close', () => resolve());
    more();
  });
}

const pair = proxyInFrontOf(
  (req: Recorded, res: ServerResponse) => {
    if (req.url === '/props') return endlessProps(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(textCompletion('done'));
  },
  { env: { TOOLPROOF_ADMISSION_CONCURRENCY: 'auto' } },
);

describe('an endless /props body', () => {
  it('the slot probe reads 1 MB of it and hangs up; requests are served', async () => {
    const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(pair.upstream.requests.some((r) => r.url === '/props')).toBe(true);
    await propsDone;
    // 96 MB read and kept before (and an endless body: until the process died)
    expect(written).toBeLessThan(16 * 1024 * 1024);
    const heapAfter = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    expect(heapAfter - heapBefore).toBeLessThan(48 * 1024 * 1024);
  }, 60_000);

  it('the start-up probe (fetchJson) gives up past the limit: no answer, nothing kept', async () => {
    const got = await fetchJson(`${pair.upstream.origin}/props`);
    await propsDone;
    expect(got).toBeUndefined();
    expect(written).toBeLessThan(PROBE_BODY_LIMIT + 16 * 1024 * 1024);
  }, 60_000);
});
