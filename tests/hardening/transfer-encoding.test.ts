/**
 * HTTP/1.1 transfer codings on a request (RFC 9112 §7). Node's parser reads the closing `chunked`
 * (codings that do not end with it are its 400) and hands the body on still coded: before,
 * `Transfer-Encoding: gzip, chunked` on any front door read as "The request body is not valid
 * JSON: Unexpected token '\u001f'". Now a gzip or deflate transfer coding is decoded as the same
 * content coding is (server/content-encoding.ts), under the body limit on its decoded bytes;
 * one toolproof cannot decode, or one on top of a content coding, is the door's 415 naming it.
 * Sent from a raw socket: no HTTP client sends a transfer coding but chunked of its own.
 */
import { connect } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, rawRequest, sendCompletion } from '../support/harness.js';

const LIMIT = 1024 * 1024;
const KEY = 'sk-transfer-coding-0001';

const USAGE = { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

const pair = proxyInFrontOf((_req, res) => sendCompletion(res, { content: 'ok' }, 'stop', USAGE), {
  env: { TOOLPROOF_BODY_LIMIT_BYTES: String(LIMIT) },
  file: { keys: [{ name: 'k', key: KEY }] },
});

const DOORS: Array<[string, string]> = [
  [
    '/v1/chat/completions',
    JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi there' }] }),
  ],
  ['/v1/responses', JSON.stringify({ model: 'm1', input: 'hi there' })],
  [
    '/v1/messages',
    JSON.stringify({ model: 'm1', max_tokens: 5, messages: [{ role: 'user', content: 'hi there' }] }),
  ],
];

/** `body` in chunks of at most 16 KiB under `Transfer-Encoding: <te>`, from a raw socket. */
function send(path: string, te: string, body: Buffer, extra = '') {
  const frames: Buffer[] = [];
  for (let at = 0; at < body.length; at += 16_384) {
    const piece = body.subarray(at, at + 16_384);
    frames.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  frames.push(Buffer.from('0\r\n\r\n'));
  const head =
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\n` +
    `Content-Type: application/json\r\nTransfer-Encoding: ${te}\r\n${extra}\r\n`;
  return rawRequest(Number(new URL(pair.proxy.origin).port), Buffer.concat([Buffer.from(head), ...frames]));
}

/** The door's error: its message, after checking the shape is that door's. */
function errorOf(path: string, body: string): { message: string; code?: string } {
  const json = JSON.parse(body) as { type?: string; error: { message: string; code?: string } };
  if (path === '/v1/messages') expect(json.type).toBe('error');
  else expect(json.error.code).toBeTypeOf('string');
  return json.error;
}

describe('a transfer coding on the request', () => {
  it.each(DOORS)('%s: gzip, chunked and deflate, chunked are decoded and answered', async (path, body) => {
    for (const [te, pack] of [
      ['gzip, chunked', gzipSync],
      ['Deflate,Chunked', deflateSync],
    ] as const) {
      const before = pair.upstream.requests.length;
      const res = await send(path, te, pack(body));
      expect(res.status, `${te}: ${res.body}`).toBe(200);
      const sent = pair.upstream.requests.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.headers['content-encoding']).toBeUndefined();
      expect(sent[0]!.body.toString()).toContain('hi there');
    }
  });

  it.each(DOORS)(
    '%s: a coding toolproof has no decoder for, or a chain, is the 415 naming it',
    async (path, body) => {
      const before = pair.upstream.requests.length;
      for (const [te, extra, named] of [
        ['compress, chunked', '', 'Transfer-Encoding: compress'],
        ['gzip, gzip, chunked', '', 'Transfer-Encoding: gzip, gzip'],
        ['gzip, chunked', 'Content-Encoding: gzip\r\n', 'Content-Encoding: gzip; Transfer-Encoding: gzip'],
      ] as const) {
        const res = await send(path, te, gzipSync(body), extra);
        expect(res.status, te).toBe(415);
        expect(errorOf(path, res.body).message).toContain(named);
      }
      expect(pair.upstream.requests.length).toBe(before);
    },
  );

  it.each(DOORS)('%s: a gzip bomb as a transfer coding is the 413 at the body limit', async (path) => {
    const bomb = gzipSync(Buffer.alloc(16 * LIMIT));
    const res = await send(path, 'gzip, chunked', bomb);
    expect(res.status).toBe(413);
    errorOf(path, res.body);
  });

  it('a corrupt gzip body is the 400 naming the transfer coding', async () => {
    const res = await send('/v1/chat/completions', 'gzip, chunked', Buffer.from('not gzip at all'));
    expect(res.status).toBe(400);
    expect(errorOf('/v1/chat/completions', res.body).message).toContain('Transfer-Encoding: gzip');
  });

  /**
   * Bytes that decode to nothing (empty gzip members, 20 bytes each; empty stored deflate blocks,
   * 5 bytes each) sent chunked, as fast as the socket takes them, until the server answers or 16x
   * the limit is sent. Before, fastify compared the encoded bytes with the limit only when a
   * decoded chunk came: all 16 MiB were read and decoded and the body was then the 400 'not valid
   * JSON' (256 MiB took ~2.2 s of CPU); a plain body is the 413 once past its limit.
   */
  const members = Buffer.concat(Array.from({ length: 3276 }, () => gzipSync('')));
  it.each<[string, string, Buffer, Buffer]>([
    [
      'empty gzip members (Transfer-Encoding: gzip, chunked)',
      'Transfer-Encoding: gzip, chunked',
      members,
      members,
    ],
    [
      'empty deflate blocks (Content-Encoding: deflate, chunked)',
      'Content-Encoding: deflate\r\nTransfer-Encoding: chunked',
      Buffer.concat([Buffer.from([0x78, 0x01]), Buffer.alloc(65_530, Buffer.from([0, 0, 0, 0xff, 0xff]))]),
      Buffer.alloc(65_535, Buffer.from([0, 0, 0, 0xff, 0xff])),
    ],
  ])(
    '%s: a body of bytes that decode to nothing is the 413 once its bytes pass the limit',
    async (_label, headers, first, rest) => {
      const socket = connect(Number(new URL(pair.proxy.origin).port), '127.0.0.1');
      const frame = (b: Buffer) =>
        Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
      const next = frame(rest);
      let sent = 0;
      let answer = '';
      const done = new Promise<void>((resolve) => {
        socket.on('data', (d) => {
          answer += d.toString('latin1');
          if (answer.includes('\r\n\r\n')) resolve();
        });
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
      });
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
          `Content-Type: application/json\r\n${headers}\r\n\r\n`,
      );
      socket.write(frame(first));
      sent += first.length;
      const pump = () => {
        while (answer === '' && !socket.destroyed && sent < 16 * LIMIT) {
          sent += next.length;
          if (!socket.write(next)) return void socket.once('drain', pump);
        }
        if (answer === '' && !socket.destroyed) socket.write('0\r\n\r\n');
      };
      pump();
      await done;
      socket.destroy();
      expect(sent, answer.split('\r\n')[0]).toBeLessThan(8 * LIMIT);
      // the answer, unless the server's close with the client's bytes still unread reset it first
      if (answer !== '') expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    },
  );
});
