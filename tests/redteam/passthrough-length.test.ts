/**
 * The pass-through relays the upstream's headers, content-length included, and its body as
 * read: an event stream ends at its [DONE] event (server/sse-done.ts), and a toolproof upstream
 * key the body echoes is replaced by a marker (server/upstream-secrets.ts). Either body is
 * another length than the upstream declared: sent under the upstream's content-length, the
 * client waited for bytes that never came (until the keep-alive timeout, 72 s) or, the body
 * grown, read its tail as the next response on the connection.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const KEY = 'sk-upstream-SECRET-0123456789';
/** Shorter than the marker ([upstream-key], 14 bytes): the scrubbed body grows. */
const SHORT_KEY = 'k-123456';
const STREAM = 'data: {"a":1}\n\ndata: [DONE]\n\ndata: {"after":true}\n\n';

const pair = proxyInFrontOf(
  (req, res) => {
    if (req.url === '/v1/cut-stream') {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'content-length': Buffer.byteLength(STREAM),
      });
      res.end(STREAM);
      return;
    }
    // A plain error page that quotes the header it got; node declares its length.
    res.setHeader('content-type', 'application/json');
    res.end(`{"error":"bad key ${String(req.headers.authorization)}"}`);
  },
  {
    env: { TOOLPROOF_UPSTREAM_API_KEY: KEY },
    file: (url) => ({ models: { short: { upstream: url, apiKey: SHORT_KEY } } }),
  },
);

async function post(path: string, body = '{}'): Promise<{ text: string; length: string | null }> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(5_000),
  });
  return { length: res.headers.get('content-length'), text: await res.text() };
}

describe('a pass-through body of another length than the upstream declared', () => {
  it('an event stream cut at its [DONE] ends there, at once', async () => {
    const got = await post('/v1/cut-stream');
    expect(got.text).toBe('data: {"a":1}\n\ndata: [DONE]\n\n');
    expect(got.length).toBeNull();
  });

  it('a body whose echoed key was replaced (the key longer than the marker) comes whole, at once', async () => {
    const got = await post('/v1/echo');
    expect(got.text).toBe('{"error":"bad key Bearer [upstream-key]"}');
  });

  it('the same with a key shorter than the marker: the whole body, and the connection still reads', async () => {
    const body = JSON.stringify({ model: 'short' });
    for (let i = 0; i < 3; i++) {
      const got = await post('/v1/echo', body);
      expect(got.text).toBe('{"error":"bad key Bearer [upstream-key]"}');
    }
  });
});
