/**
 * An upstream that streams on past the max_tokens it was sent (a broken backend, a model looping
 * under ignore_eos): each event a token, for ever. Only the 64 MiB size bound stopped it on the
 * front doors (about two million tokens: hours of a GPU at a model's pace), and nothing on the
 * relays (the chat door without tools, /v1/completions), which streamed it for as long as the
 * client read. A stream may now carry twice max_tokens events per choice, and 64 more
 * (server/chat/stream-read.ts eventAllowance): past that the upstream connection is closed and
 * the client gets its door's error event, naming max_tokens. An answer that stops where it was
 * asked to (n choices of max_tokens events each, usage, [DONE]) ends as before.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';
import { writeBounded, writeEndless } from '../support/sse-upstream.js';

type Write = (res: ServerResponse, chat: boolean) => void;
let write: Write = () => undefined;
let closed = 0;
let written = 0;
const pair = proxyInFrontOf((req, res) => {
  res.on('close', () => closed++);
  write(res, req.url.endsWith('/chat/completions'));
});

/** One token an event, without end, until toolproof hangs up. */
const endless: Write = (res, chat) => writeEndless(res, chat, () => written++);

/** n choices of `tokens` events each, interleaved, then the finish events, usage and [DONE]. */
const bounded =
  (tokens: number, n: number): Write =>
  (res, chat) =>
    writeBounded(res, chat, tokens, n, true);

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
const doors = {
  'chat with tools': (max: number, n = 1) => ({
    path: '/v1/chat/completions',
    body: {
      model: 'm1',
      stream: true,
      max_tokens: max,
      n,
      messages: [{ role: 'user', content: 'hi' }],
      tools,
    },
  }),
  'chat without tools (relayed)': (max: number, n = 1) => ({
    path: '/v1/chat/completions',
    body: {
      model: 'm1',
      stream: true,
      max_completion_tokens: max,
      n,
      messages: [{ role: 'user', content: 'hi' }],
    },
  }),
  '/v1/completions (relayed)': (max: number, n = 1) => ({
    path: '/v1/completions',
    body: { model: 'm1', stream: true, max_tokens: max, n, prompt: 'hi' },
  }),
  messages: (max: number) => ({
    path: '/v1/messages',
    body: { model: 'm1', stream: true, max_tokens: max, messages: [{ role: 'user', content: 'hi' }] },
  }),
  responses: (max: number) => ({
    path: '/v1/responses',
    body: { model: 'm1', stream: true, max_output_tokens: max, input: 'hi' },
  }),
};
type Door = keyof typeof doors;

async function post(door: Door, max: number, n?: number): Promise<string> {
  const { path, body } = doors[door](max, n);
  const res = await fetch(pair.proxy.origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  expect(res.status).toBe(200);
  return res.text();
}

describe.each(Object.keys(doors) as Door[])('%s, streamed', (door) => {
  it('an upstream that writes on past max_tokens: hung up on, the error event naming max_tokens', async () => {
    write = endless;
    closed = 0;
    written = 0;
    const text = await post(door, 50);
    expect(text).toContain('did not stop where it was asked to');
    expect(text).toContain('max_tokens 50');
    // The upstream's connection closed: it stops generating. What it wrote is what sat in the
    // sockets' buffers when toolproof hung up, not the 64 MiB the size bound waited for.
    await expect.poll(() => closed).toBeGreaterThan(0);
    expect(written).toBeLessThan(100_000);
    expect(text.length).toBeLessThan(2 << 20);
  });

  it('an answer of max_tokens events per choice ends as before', async () => {
    const n = door.startsWith('chat') || door.startsWith('/v1') ? 3 : 1;
    write = bounded(50, n);
    const text = await post(door, 50, n);
    expect(text).not.toContain('did not stop');
    expect(text).not.toMatch(/"type":"error"|event: error|"error":\{/);
  });
});
