/**
 * A client that asks for a non-streamed answer and never reads it, staying connected. The answer
 * is whole in memory once (the upstream's body, at most its 64 MiB bound, or the door's
 * translation), handed to the socket at once; what the socket does not take waits in the
 * response's buffer. It waited for as long as the client kept the socket open: the answer's
 * memory, the response's place among the open ones (its log line and metrics not written yet)
 * and the connection, for good. As for a stream (client-never-reads.test.ts), a response that
 * takes none of its bytes for TOOLPROOF_REQUEST_TIMEOUT_MS is now cut as gone (server/drain.ts,
 * cutWhenUnread: after one to two times the timeout). A client that reads slowly is not cut.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, type FakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

let upstream: FakeUpstream;
let proxy: RunningProxy;
/** Far larger than the sockets' buffers on both sides. */
const ANSWER = 'z'.repeat(16 * 1024 * 1024);

beforeAll(async () => {
  upstream = await fakeUpstream((req, res) => {
    const path = req.url;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      path.endsWith('/completions') && !path.endsWith('/chat/completions')
        ? JSON.stringify({ id: 'c', object: 'text_completion', choices: [{ index: 0, text: ANSWER }] })
        : JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 1,
            model: 'm1',
            choices: [{ index: 0, message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }],
          }),
    );
  });
  proxy = await startProxy(
    { TOOLPROOF_UPSTREAM_URL: upstream.url, TOOLPROOF_REQUEST_TIMEOUT_MS: '500' },
    { defaults: { forceToolUse: false } },
  );
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

/** A request on a raw socket whose response is never read (or read slowly: `drip`). */
function send(path: string, body: object, drip?: (bytes: number) => void): Socket {
  const text = JSON.stringify(body);
  const socket = connect(proxy.port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.pause();
  if (drip) {
    // Reads for 20 ms every 200 ms: pauses, but never one of a whole timeout.
    socket.on('data', (c: Buffer) => drip(c.length));
    const timer = setInterval(() => {
      socket.resume();
      setTimeout(() => socket.pause(), 20);
    }, 200);
    socket.on('close', () => clearInterval(timer));
  }
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  return socket;
}

/** Responses still open on the proxy (every request's response is listed until it closes). */
const open = () => proxy.app.toolproof.openStreams.size;

const messages = [{ role: 'user', content: 'hi' }];
const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
const CASES: Array<[string, string, object]> = [
  ['chat completions, relayed', '/v1/chat/completions', { model: 'm1', messages }],
  ['chat completions, with tools', '/v1/chat/completions', { model: 'm1', messages, tools }],
  ['Responses', '/v1/responses', { model: 'm1', input: 'hi' }],
  ['Messages', '/v1/messages', { model: 'm1', max_tokens: 100_000, messages }],
  ['completions (relayed)', '/v1/completions', { model: 'm1', prompt: 'hi' }],
  ['the pass-through', '/completion', { model: 'm1', prompt: 'hi' }],
];

async function until(ok: () => boolean, ms: number): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end; ) {
    if (ok()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return ok();
}

describe('a client that never reads its non-streamed answer', () => {
  it.each(CASES)(
    '%s: cut as gone after the request timeout',
    async (_name, path, body) => {
      const before = open();
      const socket = send(path, body);
      const closed = new Promise<void>((r) => socket.on('close', () => r()));
      expect(await until(() => open() === before + 1, 10_000)).toBe(true);
      // Cut after 0.5-1 s without progress, plus the time to write the answer into the buffers
      // (seconds on a loaded box); never, without the cut.
      expect(await until(() => open() === before, 20_000)).toBe(true);
      socket.resume(); // what the kernel held, then the end the server sent
      await closed;
    },
    40_000,
  );

  it('a client that reads slowly gets its whole answer', async () => {
    let got = 0;
    const socket = send('/v1/chat/completions', { model: 'm1', messages }, (n) => {
      got += n;
    });
    expect(await until(() => got > ANSWER.length, 20_000)).toBe(true);
    socket.destroy();
  }, 30_000);
});
