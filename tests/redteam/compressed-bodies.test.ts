/**
 * toolproof never decompresses a request body (a few hundred kilobytes of gzip can be gigabytes).
 * A compressed body on a front door read as "The request body is not valid JSON: Unexpected token
 * '\u001f'", its compressed bytes echoed in the message; now a 415 in the door's own shape that
 * names the encoding. On the pass-through, a key held to some models sent `Content-Encoding:
 * gzip` over a body whose model toolproof could not read: it went to the default upstream
 * unjudged, and an upstream that decompresses requests served whatever model it named.
 */
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const KEY = 'sk-only-m1-000000010';
const OPEN = 'sk-all-models-000000010';

const pair = proxyInFrontOf(
  (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [], bytes: req.body.length }));
  },
  {
    file: {
      keys: [
        { name: 'narrow', key: KEY, models: ['m1'] },
        { name: 'open', key: OPEN },
      ],
    },
  },
);

const post = (path: string, body: Buffer, encoding: string, key = KEY) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-encoding': encoding,
    },
    body,
  });

const chat = JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
const messages = JSON.stringify({ model: 'm1', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
const responses = JSON.stringify({ model: 'm1', input: 'hi' });

describe('a compressed request body', () => {
  it.each([
    ['/v1/chat/completions', 'gzip', chat],
    ['/v1/responses', 'deflate', responses],
    ['/v1/messages', 'gzip', messages],
    ['/v1/embeddings', 'br', JSON.stringify({ model: 'm1', input: 'x' })],
  ])('%s (%s): a 415 in the API shape naming the encoding, nothing sent', async (path, encoding, body) => {
    const before = pair.upstream.requests.length;
    const packed = encoding === 'deflate' ? deflateSync(body) : gzipSync(body);
    const res = await post(path, packed, encoding);
    const text = await res.text();
    expect(res.status, text).toBe(415);
    const parsed = JSON.parse(text);
    if (path === '/v1/messages') expect(parsed.type).toBe('error');
    expect(parsed.error.message).toContain(`Content-Encoding: ${encoding}`);
    // None of the compressed bytes are echoed back.
    expect(text).not.toContain('\\u001f');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it("on the pass-through, a key held to some models: a 415, the body's model never reaches the upstream", async () => {
    const before = pair.upstream.requests.length;
    for (const path of ['/v1/audio/speech', '/v1/rerank']) {
      const res = await post(path, gzipSync(JSON.stringify({ model: 'secret', input: 'x' })), 'gzip');
      expect(res.status, path).toBe(415);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        'Content-Encoding: gzip',
      );
    }
    expect(pair.upstream.requests.length).toBe(before);
    // A key that may use every model: relayed as it came (the upstream decides).
    const open = await post('/v1/rerank', gzipSync('{"model":"x"}'), 'gzip', OPEN);
    expect(open.status).toBe(200);
    expect(pair.upstream.requests.length).toBe(before + 1);
    // Uncompressed (or `identity`), the narrow key's own model is served as before.
    expect((await post('/v1/rerank', Buffer.from('{"model":"m1"}'), 'identity')).status).toBe(200);
  });
});
