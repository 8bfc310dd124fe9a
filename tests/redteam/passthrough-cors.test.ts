/**
 * Browser access is toolproof's to grant (TOOLPROOF_CORS_ORIGINS, server/cors.ts), on every
 * route. The pass-through relayed the upstream's own CORS headers, and vLLM answers any request
 * that carries an Origin with `access-control-allow-origin: *` (its default): an origin the
 * operator had not allowed, or CORS turned off, read /tokenize, /v1/files and every other
 * relayed route from a browser all the same.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const pair = proxyInFrontOf(
  (req, res) => {
    // As vLLM's CORS middleware (allow_origins ["*"]) answers a request with an Origin.
    const cors: Record<string, string> =
      req.headers.origin === undefined
        ? {}
        : {
            'access-control-allow-origin': '*',
            'access-control-allow-credentials': 'true',
            'access-control-expose-headers': '*',
          };
    res.writeHead(200, { 'content-type': 'application/json', ...cors });
    res.end('{"tokens":[1,2,3]}');
  },
  { env: { TOOLPROOF_CORS_ORIGINS: 'https://app.example' } },
);

const tokenize = (origin: string) =>
  fetch(`${pair.proxy.origin}/tokenize`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json' },
    body: '{"prompt":"hi"}',
  });

describe("the pass-through answers under toolproof's CORS, not the upstream's", () => {
  it('an origin not allowed gets no allow header, whatever the upstream said', async () => {
    const res = await tokenize('https://evil.example');
    expect(await res.text()).toBe('{"tokens":[1,2,3]}');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('an allowed origin gets toolproof’s headers', async () => {
    const res = await tokenize('https://app.example');
    await res.text();
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-expose-headers')).toContain('x-request-id');
  });
});
