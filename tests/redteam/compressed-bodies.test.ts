/**
 * A compressed request body (Codex sends zstd, gateways and some SDKs gzip) is decoded before it
 * is read, judged and forwarded. Before redteam10 a gzip body on a front door read as "The
 * request body is not valid JSON: Unexpected token '\u001f'", its compressed bytes echoed; then
 * a 415 on every turn of such a client. On the pass-through a key held to some models sent
 * `Content-Encoding: gzip` over a body whose model toolproof could not read, and an upstream that
 * decompresses requests served whatever model it named: now the decoded model is judged.
 * A bomb is bounded by the body limit on the decoded bytes; what toolproof cannot decode (a chain
 * of codings, an unknown one) is a 415 that names it.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const KEY = 'sk-only-m1-000000010';
const OPEN = 'sk-all-models-000000010';
const LIMIT = 1024 * 1024;

const completion = {
  id: 'c1',
  object: 'chat.completion',
  created: 1,
  model: 'm1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

const pair = proxyInFrontOf(
  (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(req.url.endsWith('/chat/completions') ? completion : { object: 'list', data: [] }),
    );
  },
  {
    env: { TOOLPROOF_BODY_LIMIT_BYTES: String(LIMIT) },
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

const PACK: Record<string, (b: string) => Buffer> = {
  gzip: (b) => gzipSync(b),
  'x-gzip': (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
  br: (b) => brotliCompressSync(b),
};

describe('a compressed request body', () => {
  it.each([
    ['/v1/chat/completions', 'gzip', chat],
    ['/v1/responses', 'deflate', responses],
    ['/v1/messages', 'br', messages],
    ['/v1/chat/completions', 'x-gzip', chat],
  ])('%s (%s): decoded, answered, forwarded uncompressed', async (path, encoding, body) => {
    const before = pair.upstream.requests.length;
    const res = await post(path, PACK[encoding]!(body), encoding);
    expect(res.status, await res.text()).toBe(200);
    const sent = pair.upstream.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers['content-encoding']).toBeUndefined();
    const upstream = JSON.parse(sent[0]!.body.toString());
    expect(upstream.model).toBe('m1');
    expect(JSON.stringify(upstream.messages)).toContain('hi');
  });

  it("on the pass-through, a key held to some models: the decoded body's model is judged", async () => {
    const before = pair.upstream.requests.length;
    for (const path of ['/v1/audio/speech', '/v1/rerank']) {
      const res = await post(path, gzipSync(JSON.stringify({ model: 'secret', input: 'x' })), 'gzip');
      expect(res.status, path).toBe(403);
    }
    expect(pair.upstream.requests.length).toBe(before);
    // Its own model: relayed decoded, without the coding (vLLM and llama-server decode no request).
    const own = await post('/v1/rerank', gzipSync('{"model":"m1","query":"q"}'), 'gzip');
    expect(own.status).toBe(200);
    const sent = pair.upstream.requests.at(-1)!;
    expect(sent.body.toString()).toBe('{"model":"m1","query":"q"}');
    expect(sent.headers['content-encoding']).toBeUndefined();
    // A key that may use every model: the same.
    expect((await post('/v1/rerank', gzipSync('{"model":"x"}'), 'gzip', OPEN)).status).toBe(200);
  });

  it('a bomb is a 413 at the body limit on its decoded bytes, in the API shape', async () => {
    // 64 MiB of zeros in ~64 KB: 64 times the limit once decoded.
    const bomb = gzipSync(Buffer.alloc(64 * LIMIT));
    expect(bomb.length).toBeLessThan(LIMIT);
    const before = pair.upstream.requests.length;
    const res = await post('/v1/messages', bomb, 'gzip');
    expect(res.status).toBe(413);
    const body = (await res.json()) as { type: string; error: { message: string } };
    expect(body.type).toBe('error');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('what toolproof cannot decode is a 415 naming it; a corrupt body a 400; nothing sent', async () => {
    const before = pair.upstream.requests.length;
    const zstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';
    const cases: Array<[string, Buffer]> = [
      // a chain could make its inner layer as large as it likes from a small body
      ['gzip, gzip', gzipSync(gzipSync(chat))],
      ['compress', Buffer.from(chat)],
      ...(zstd ? [] : ([['zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0])]] as Array<[string, Buffer]>)),
    ];
    for (const [encoding, body] of cases) {
      const res = await post('/v1/chat/completions', body, encoding);
      const text = await res.text();
      expect(res.status, encoding).toBe(415);
      expect(JSON.parse(text).error.message).toContain(`Content-Encoding: ${encoding}`);
      expect(text).not.toContain('\\u001f');
    }
    const corrupt = gzipSync(chat).subarray(0, 12);
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/rerank']) {
      const res = await post(path, corrupt, 'gzip');
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        'could not be decoded (Content-Encoding: gzip)',
      );
    }
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('a request without a body that names a coding is answered as before', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/models`, {
      headers: { authorization: `Bearer ${OPEN}`, 'content-encoding': 'gzip' },
    });
    expect(res.status).toBe(200);
    // and the server is still up
    expect((await fetch(`${pair.proxy.origin}/health`)).status).toBe(200);
  });
});
