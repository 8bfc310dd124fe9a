/**
 * A client that opens a stream and never reads it, staying connected. toolproof waits for the
 * socket to drain (backpressure: the upstream read pauses, memory stays bounded), but it waited
 * for as long as the client kept the socket open: the request held its upstream stream and its
 * admission slot for good, and every other key's request timed out in the queue (503). A wait
 * that sees no drain for TOOLPROOF_REQUEST_TIMEOUT_MS now cuts the client as gone
 * (server/drain.ts): the upstream request is cancelled and the slot goes to the next.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chunkEvent,
  fakeUpstream,
  type FakeUpstream,
  type RunningProxy,
  sendCompletion,
  startProxy,
} from '../support/harness.js';

let upstream: FakeUpstream;
let proxy: RunningProxy;
/** Upstream requests whose client (toolproof) hung up before the answer was written whole. */
let cancelled = 0;

beforeAll(async () => {
  upstream = await fakeUpstream((req, res) => {
    const body = JSON.parse(req.body.toString()) as { stream?: boolean };
    if (!body.stream) {
      sendCompletion(res, { content: 'ok' });
      return;
    }
    // An answer far larger than the sockets' buffers, written as fast as it is taken.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.on('close', () => {
      if (!res.writableFinished) cancelled++;
    });
    const piece = req.url.endsWith('/chat/completions')
      ? chunkEvent({ content: 'z'.repeat(64 * 1024) })
      : `data: ${JSON.stringify({ id: 'c', object: 'text_completion', choices: [{ index: 0, text: 'z'.repeat(64 * 1024) }] })}\n\n`;
    let n = 0;
    const pump = (): void => {
      while (n < 2_000) {
        n++;
        if (!res.write(piece)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end('data: [DONE]\n\n');
    };
    pump();
  });
  proxy = await startProxy(
    { TOOLPROOF_UPSTREAM_URL: upstream.url, TOOLPROOF_REQUEST_TIMEOUT_MS: '250' },
    {
      admission: { concurrency: 1, queueSize: 4, queueTimeoutMs: 10_000 },
      defaults: { forceToolUse: false },
    },
  );
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

/** Streamed requests the upstream has received (not the model list or a probe). */
const streamsStarted = () =>
  upstream.requests.filter((r) => r.method === 'POST' && r.body.includes('"stream":true')).length;

/** A streamed request on a raw socket that is never read from. */
function neverRead(path: string, body: object): Socket {
  const text = JSON.stringify(body);
  const socket = connect(proxy.port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.pause();
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  return socket;
}

const messages = [{ role: 'user', content: 'hi' }];
const CASES: Array<[string, string, object]> = [
  ['chat completions', '/v1/chat/completions', { model: 'm1', stream: true, messages }],
  ['Responses', '/v1/responses', { model: 'm1', stream: true, input: 'hi' }],
  ['Messages', '/v1/messages', { model: 'm1', stream: true, max_tokens: 100_000, messages }],
  ['completions (relayed)', '/v1/completions', { model: 'm1', stream: true, prompt: 'hi' }],
  // The pass-through (llama-server's own route) takes no admission slot, but a backend slot.
  ['the pass-through', '/completion', { model: 'm1', stream: true, prompt: 'hi' }],
];

describe('a client that opens a stream and never reads it', () => {
  it.each(CASES)(
    '%s: cut as gone, its upstream request cancelled, the slot to the next client',
    async (_name, path, body) => {
      const before = cancelled;
      const sent = streamsStarted();
      const socket = neverRead(path, body);
      // It holds the slot (its stream started upstream) before the other client comes.
      while (streamsStarted() === sent) await new Promise((r) => setTimeout(r, 10));
      // Another client's request, queued behind the stalled one for the only slot.
      const started = performance.now();
      const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm1', messages }),
      });
      expect(res.status).toBe(200);
      expect(
        ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
          .content,
      ).toBe('ok');
      // Served once the stalled client was cut, long before the queue's 10 s timeout.
      expect(performance.now() - started).toBeLessThan(8_000);
      for (let i = 0; i < 500 && cancelled === before; i++) await new Promise((r) => setTimeout(r, 10));
      expect(cancelled).toBe(before + 1);
      socket.destroy();
    },
  );
});
