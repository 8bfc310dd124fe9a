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
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, rawRequest, sendCompletion } from '../support/harness.js';

const KEY = 'sk-only-m1-000000010';
const OPEN = 'sk-all-models-000000010';
const LIMIT = 1024 * 1024;

const USAGE = { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

const pair = proxyInFrontOf(
  (req, res) => {
    if (req.url.endsWith('/chat/completions')) return sendCompletion(res, { content: 'ok' }, 'stop', USAGE);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [] }));
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

  it('a bomb is cut at the limit: the rest is never decoded (no CPU after the 413)', async () => {
    // 1,617 bytes of brotli that decode to 1 GiB of zeros (brotliCompress, quality 5), received
    // whole before the first MiB is decoded. Fastify's reader stopped listening at the limit, but
    // a decoder nobody listens to goes on flowing: the 413 came at once and the process then
    // spent ~2.8 s of CPU decoding the other 1,023 MiB for nobody (a gzip bomb large enough to
    // be cut mid-upload was stopped by the client's connection closing; this one is not).
    const bomb = readFileSync(new URL('../fixtures/bombs/zeros-1gib.br', import.meta.url));
    // The bytes every brotli decoder in this process puts out (the server is in this process).
    const proto = zlib.BrotliDecompress.prototype as unknown as { push(chunk: Buffer | null): boolean };
    const push = proto.push;
    let decoded = 0;
    proto.push = function (this: unknown, chunk: Buffer | null) {
      if (chunk) decoded += chunk.length;
      return push.call(this, chunk);
    };
    try {
      const res = await post('/v1/chat/completions', bomb, 'br');
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('TP_ERR_BODY_TOO_LARGE');
      // A decoder left running goes on meanwhile (~50 MB in this time even on a loaded box).
      await new Promise((r) => setTimeout(r, 300));
      expect(decoded, `${decoded} bytes decoded`).toBeLessThanOrEqual(LIMIT + 64 * 1024);
    } finally {
      proto.push = push;
    }
  });

  it('deflate: zlib-wrapped, or raw DEFLATE (no zlib header) as browsers and curl read it', async () => {
    const before = pair.upstream.requests.length;
    // Raw DEFLATE labelled deflate: some clients send it (RFC 9110 §8.4.1.2); it was a 400.
    for (const [path, body] of [
      ['/v1/chat/completions', chat],
      ['/v1/responses', responses],
      ['/v1/messages', messages],
    ] as const) {
      const res = await post(path, deflateRawSync(body), 'deflate');
      expect(res.status, `${path}: ${await res.text()}`).toBe(200);
    }
    // a gzip body labelled deflate still reads (zlib's Unzip), and a raw one on the pass-through
    expect((await post('/v1/chat/completions', gzipSync(chat), 'deflate')).status).toBe(200);
    const relay = await post('/v1/rerank', deflateRawSync('{"model":"m1","query":"raw"}'), 'deflate');
    expect(relay.status).toBe(200);
    expect(pair.upstream.requests.at(-1)!.body.toString()).toBe('{"model":"m1","query":"raw"}');
    expect(pair.upstream.requests.length).toBe(before + 5);
    // Sent chunked a byte at a time (the first two bytes decide): the same.
    const raw = deflateRawSync(chat);
    const chunked = Buffer.concat([
      Buffer.from(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\n` +
          'Content-Type: application/json\r\nContent-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n\r\n',
      ),
      ...[...raw].map((b) => Buffer.concat([Buffer.from('1\r\n'), Buffer.from([b]), Buffer.from('\r\n')])),
      Buffer.from('0\r\n\r\n'),
    ]);
    expect((await rawRequest(pair.proxy.port, chunked)).status).toBe(200);
    // A corrupt one (a raw header, garbage after it) and a one-byte body: the 400 that says so.
    for (const body of [Buffer.from([0x05, 0xff, 0xff, 0xff]), Buffer.from([0x78])]) {
      const res = await post('/v1/chat/completions', body, 'deflate');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        'could not be decoded (Content-Encoding: deflate)',
      );
    }
    // Content-Length counts the encoded bytes, the two looked at included.
    const short = deflateRawSync(chat);
    const lying = await rawRequest(
      pair.proxy.port,
      Buffer.concat([
        Buffer.from(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\n` +
            `Content-Type: application/json\r\nContent-Encoding: deflate\r\nContent-Length: ${short.length}\r\n\r\n`,
        ),
        short,
      ]),
    );
    expect(lying.status).toBe(200);
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
