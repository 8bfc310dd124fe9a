/**
 * Receiving a request is bounded: a client that withholds the last byte of its body (or never
 * finishes its headers) is cut with 408, and its buffer freed. The limits cover receiving the
 * request only: a streamed response that runs longer than them is not cut.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { collectStream } from '../server/stack.js';
import OpenAI from 'openai';
import type { AddressInfo } from 'node:net';

let sim: Simulator;
let app: ToolproofApp;
let port: number;

beforeAll(async () => {
  sim = await createSimulator({
    personality: 'vllm',
    scenario: [{ say: 'word '.repeat(40), chunkDelayMs: 40 }],
  });
  app = await buildApp(
    loadConfig({
      TOOLPROOF_UPSTREAM_URL: sim.url,
      TOOLPROOF_REQUEST_TIMEOUT_MS: '600',
      TOOLPROOF_HEADERS_TIMEOUT_MS: '400',
    }),
    { logger: false },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await app.close();
  await sim.close();
});

/** Writes `bytes`, then waits (without sending more) until the server answers and closes. */
function withhold(bytes: string): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept the slow request open'));
    }, 8_000);
    socket.on('data', (c) => {
      text += c.toString('utf8');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: Date.now() - started });
    });
    socket.write(bytes);
  });
}

/** Sends `head`, then `body` one byte every 100 ms (the request timeout is 600 ms). */
function trickle(head: string, body: Buffer): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let at = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept the slow request open'));
    }, 8_000);
    const drip = setInterval(() => {
      if (at < body.length && !socket.destroyed) socket.write(body.subarray(at, ++at));
    }, 100);
    socket.on('data', (c) => {
      text += c.toString('utf8');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      clearInterval(drip);
      resolve({ text, ms: Date.now() - started });
    });
    socket.write(head);
  });
}

// The cases run at once, each on its own connections: one after another they waited out ~0.5 s of
// timeouts each and the ~1.6 s stream (3.7 s in all).
describe.concurrent('slow clients', () => {
  it('a body missing its last byte is cut with 408 (it used to be held forever)', async ({ expect }) => {
    const body = 'x'.repeat(64 * 1024);
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1}\r\n\r\n`;
    const { text } = await withhold(head + body);
    expect(text).toMatch(/^HTTP\/1\.1 408/);
  });

  it("a body sent a byte at a time is cut with 408 in each door's error shape", async ({ expect }) => {
    const body = Buffer.from(
      JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    );
    const head = (path: string, extra = '') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}Content-Length: ${body.length}\r\n\r\n`;
    const [chat, messages, responses, deflated] = await Promise.all([
      trickle(head('/v1/chat/completions'), body),
      trickle(head('/v1/messages'), body),
      trickle(head('/v1/responses'), body),
      // a deflate body is looked at before it is decoded (its first two bytes): the same bound
      trickle(head('/v1/messages', 'Content-Encoding: deflate\r\n'), body),
    ]);
    for (const r of [chat, messages, responses, deflated]) expect(r.text).toMatch(/^HTTP\/1\.1 408/);
    const json = (r: { text: string }) => JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4));
    // Messages' own shape (it was OpenAI's: node's 408 carries no request line to pick it by)
    for (const r of [messages, deflated])
      expect(json(r)).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'The request was not received in time.' },
      });
    for (const r of [chat, responses]) expect(json(r).error.code).toBe('TP_ERR_INVALID_FIELD');
  });

  it('headers that never end are cut', async ({ expect }) => {
    const { text } = await withhold('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: 1');
    expect(text).toMatch(/^HTTP\/1\.1 408/);
  });

  it('many withheld bodies are all released', async ({ expect }) => {
    const body = 'x'.repeat(256 * 1024);
    const head = `POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 1}\r\n\r\n`;
    const results = await Promise.all(Array.from({ length: 20 }, () => withhold(head + body)));
    for (const r of results) expect(r.text).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a streamed response longer than the request timeout is not cut', async ({ expect }) => {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'x', maxRetries: 0 });
    const started = Date.now();
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const out = await collectStream(stream);
    expect(Date.now() - started).toBeGreaterThan(1_200); // two request timeouts and more
    expect(out.content.trim()).toBe('word '.repeat(40).trim());
    expect(out.finish).toBe('stop');
  });
});
