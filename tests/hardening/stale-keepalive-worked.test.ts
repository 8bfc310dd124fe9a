/**
 * A reused connection the upstream (or an L4 balancer or proxy in front of it) resets after it
 * read the whole request and worked on it: not the keep-alive race (which lasts milliseconds
 * around the request's last byte) but a generation cut. Sending it again would run the same
 * generation twice, up to once per idle pooled connection. The request reaches the upstream
 * exactly once, and the client gets a 502 in its API's shape.
 */
import { describe, expect, it } from 'vitest';
import { type RunningProxy, startProxy } from '../support/harness.js';
import { generatingThenResetting, type RawUpstream } from '../support/raw-upstream.js';

const chat = { model: 'm1', messages: [{ role: 'user', content: 'hi' }] };

async function post(
  proxy: RunningProxy,
  path: string,
  body: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** Opens `n` pooled connections, each left idle after one answered request. */
async function warm(upstream: RawUpstream, proxy: RunningProxy, n: number): Promise<void> {
  const all = await Promise.all(Array.from({ length: n }, () => post(proxy, '/v1/chat/completions', chat)));
  expect(all.map((r) => r.status)).toEqual(Array(n).fill(200));
  expect(upstream.connections).toBe(n);
}

const WARM = 4;
/** How long the upstream works before its reset: well past the replay window (250 ms). */
const WORK_MS = 1_000;

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
  // Each front door against an upstream and a proxy of its own, all at once: the upstream's
  // second of work is waited out once, not five times one after another (6.3 s of a full run).
  for (const [name, path, body, shape] of fronts) {
    it.concurrent(`is not sent again, with idle connections to spare (${name})`, async ({ expect }) => {
      const upstream = await generatingThenResetting(50, WORK_MS);
      const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
      try {
        await warm(upstream, proxy, WARM);
        const res = await fetch(`${proxy.origin}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        // Requests the upstream read after the warm-ups: copies of the one under test.
        expect(upstream.seen.length - WARM).toBe(1);
        expect(upstream.closedByServer).toBe(1);
        expect(res.status).toBe(502);
        if (shape) expect(JSON.parse(text)).toMatchObject(shape);
      } finally {
        await proxy.close();
        await upstream.close();
      }
    }, 30_000);
  }
});
