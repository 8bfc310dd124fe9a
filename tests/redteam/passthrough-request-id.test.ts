/**
 * One id finds a request everywhere: toolproof's `x-request-id` on the response, its log line,
 * the inspector, the id sent upstream (docs/security.md: "replaced by the request's own id (also
 * on the response)"). The pass-through relays the upstream's response headers, and an upstream
 * that answers with an `x-request-id` of its own (a gateway's, a backend that names requests
 * itself) had it written over toolproof's: the client read an id that no log line, capture or
 * trace of toolproof's holds, and the inspector could not find its request.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const pair = proxyInFrontOf((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'upstream-own-id-42' });
  res.end('{"tokens":[1,2,3]}');
});

describe('the pass-through keeps toolproof’s request id', () => {
  it('on the response, whatever id the upstream answered with', async () => {
    const res = await fetch(`${pair.proxy.origin}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'client-id-7' },
      body: '{"prompt":"hi"}',
    });
    expect(await res.text()).toBe('{"tokens":[1,2,3]}');
    // The id sent upstream is the one on the response.
    expect(pair.upstream.requests.at(-1)!.headers['x-request-id']).toBe('client-id-7');
    expect(res.headers.get('x-request-id')).toBe('client-id-7');
  });

  it('a request without an id gets toolproof’s fresh one, the same upstream and back', async () => {
    const res = await fetch(`${pair.proxy.origin}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"prompt":"hi"}',
    });
    await res.text();
    const sent = pair.upstream.requests.at(-1)!.headers['x-request-id'];
    expect(sent).toBeTruthy();
    expect(res.headers.get('x-request-id')).toBe(sent);
  });
});
