/**
 * A reused connection the upstream (or an L4 balancer or proxy in front of it) resets after it
 * read the whole request and worked on it: not the keep-alive race (which lasts milliseconds
 * around the request's last byte) but a generation cut. Sending it again would run the same
 * generation twice, up to once per idle pooled connection. The request reaches the upstream
 * exactly once, and the client gets a 502 in its API's shape.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningProxy, startProxy } from '../support/harness.js';
import { generatingThenResetting, type RawUpstream } from '../support/raw-upstream.js';

let upstream: RawUpstream | undefined;
let proxy: RunningProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await upstream?.close();
  proxy = undefined;
  upstream = undefined;
});

const chat = { model: 'm1', messages: [{ role: 'user', content: 'hi' }] };

async function post(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${proxy!.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** Opens `n` pooled connections, each left idle after one answered request. */
async function warm(n: number): Promise<void> {
  const all = await Promise.all(Array.from({ length: n }, () => post('/v1/chat/completions', chat)));
  expect(all.map((r) => r.status)).toEqual(Array(n).fill(200));
  expect(upstream!.connections).toBe(n);
}

const WARM = 4;
/** How long the upstream works before its reset: well past the replay window (250 ms). */
const WORK_MS = 1_000;

/** Requests the upstream read after the warm-ups: copies of the one under test. */
function copies(): number {
  return upstream!.seen.length - WARM;
}

describe('a reused connection reset after the upstream worked on the request', () => {
  const fronts: Array<[string, string, unknown, unknown]> = [
    [
      'chat',
      '/v1/chat/completions',
      chat,
      { error: { type: expect.any(String), message: expect.any(String) } },
    ],
    ['chat streamed', '/v1/chat/completions', { ...chat, stream: true }, undefined],
    [
      'Messages',
      '/v1/messages',
      { ...chat, max_tokens: 16 },
      { type: 'error', error: { type: 'api_error' } },
    ],
    ['Responses', '/v1/responses', { model: 'm1', input: 'hi' }, { error: { type: expect.any(String) } }],
    ['the relay', '/v1/embeddings', { model: 'm1', input: 'x' }, { error: { type: expect.any(String) } }],
  ];
  for (const [name, path, body, shape] of fronts) {
    it(`is not sent again, with idle connections to spare (${name})`, async () => {
      upstream = await generatingThenResetting(50, WORK_MS);
      proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
      await warm(WARM);
      const res = await fetch(`${proxy.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      expect(copies()).toBe(1);
      expect(upstream.closedByServer).toBe(1);
      expect(res.status).toBe(502);
      if (shape) expect(JSON.parse(text)).toMatchObject(shape);
    }, 30_000);
  }
});
