/**
 * The non-streamed pass-through relays the upstream's bytes without decoding and encoding them.
 * It must send what the text path sent before it (undici's text(), then Fastify encoding the
 * string as UTF-8 with `application/json; charset=utf-8`): byte for byte, headers included, for
 * bodies of declared length and chunked ones, with a byte-order mark, multi-byte characters cut
 * anywhere and invalid UTF-8.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayBytes, usageFromBytes, usageFromRaw } from '../../../server/chat/json-driver.js';
import { buildApp, type ToolproofApp } from '../../../server/app.js';
import { loadConfig } from '../../../server/config.js';
import { closeApp } from '../stack.js';
import { seededRng } from '../test-utils.js';

const PIECES = ['a', 'é', '€', '😀', '"', '\\n', ' ', '"usage":', '{"total_tokens":3}', 'z'];

/** A body: a completion-like JSON text with random pieces, sometimes a BOM, sometimes bad bytes. */
function randomBody(next: () => number): Buffer {
  let text = '';
  const n = Math.floor(next() * 40);
  for (let i = 0; i < n; i++) text += PIECES[Math.floor(next() * PIECES.length)];
  const parts: Buffer[] = [];
  if (next() < 0.2) parts.push(Buffer.from([0xef, 0xbb, 0xbf]));
  parts.push(Buffer.from(`{"id":"x","choices":[{"message":{"content":"${text}"}}]`));
  if (next() < 0.3)
    parts.push(Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82].slice(0, 1 + Math.floor(next() * 5))));
  if (next() < 0.6)
    parts.push(Buffer.from(',"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}'));
  parts.push(Buffer.from('}'));
  return Buffer.concat(parts);
}

/** What the text path sent: undici's text() (a BOM skipped on a declared length), encoded again. */
function textPath(body: Buffer, declared: boolean): Buffer {
  const bom = body.length > 2 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf;
  const text = (declared && bom ? body.subarray(3) : body).toString('utf8');
  return Buffer.from(text, 'utf8');
}

describe('non-streamed pass-through: the relayed bytes equal the text path', () => {
  let upstream: Server;
  let app: ToolproofApp;
  let origin: string;
  /** What the upstream answers next. */
  let next: { body: Buffer; chunked: boolean } = { body: Buffer.from('{}'), chunked: false };

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const { body, chunked } = next;
        if (chunked) {
          res.writeHead(200, { 'content-type': 'application/json' });
          // Cut inside multi-byte characters on purpose.
          res.write(body.subarray(0, Math.floor(body.length / 3)));
          res.end(body.subarray(Math.floor(body.length / 3)));
        } else {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
          res.end(body);
        }
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const config = Object.freeze(loadConfig({ TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${port}/v1` }));
    app = await buildApp(config, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await closeApp(app);
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it('for 200 seeded bodies, declared length and chunked', async () => {
    const gen = seededRng(12);
    for (let i = 0; i < 200; i++) {
      const body = randomBody(gen);
      const chunked = i % 2 === 1;
      next = { body, chunked };
      const res = await request(`${origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      const got = Buffer.from(await res.body.arrayBuffer());
      const want = textPath(body, !chunked);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(want.length);
      expect(got.equals(want), `body ${i}: ${body.toString('hex')}`).toBe(true);
    }
  });
});

describe('relayBytes and usageFromBytes on their own', () => {
  it('relayBytes keeps valid UTF-8 as the same buffer and replaces bad sequences like a decode', () => {
    const good = Buffer.from('{"a":"é😀"}');
    expect(relayBytes(good)).toBe(good);
    const bad = Buffer.from([0x7b, 0xff, 0x7d]);
    expect(relayBytes(bad).toString('utf8')).toBe('{\uFFFD}');
  });

  it('usageFromBytes reads what usageFromRaw reads from the decoded text', () => {
    const gen = seededRng(7);
    for (let i = 0; i < 300; i++) {
      const body = relayBytes(randomBody(gen));
      expect(usageFromBytes(body)).toEqual(usageFromRaw(body.toString('utf8')));
    }
  });
});
