/**
 * What a client's `n` and a missing `max_tokens` could make toolproof carry on a stream. A stream
 * may carry twice max_tokens events per choice (server/chat/stream-read.ts eventAllowance), so a
 * `/v1/completions` request's `n` of a million let an upstream that never stops stream for ever,
 * and one with no max_tokens was never bounded on the relays (the chat door without tools,
 * /v1/completions). Now `n` past 128 (OpenAI's limit, as on chat; llama-server takes 1 only) is a
 * 400 in the API's shape, and a choice's tokens are at most the model's context window when it is
 * known (prompt and answer share it: vLLM stops there without a max_tokens): past twice that the
 * upstream is hung up on, the error event naming the window. An answer that fills the window ends
 * as before.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';
import { writeBounded, writeEndless } from '../support/sse-upstream.js';

const WINDOW = 200;
type Write = (res: ServerResponse, chat: boolean) => void;
let write: Write = () => undefined;
let reached = 0;
let closed = 0;
const pair = proxyInFrontOf(
  (req, res) => {
    reached++;
    res.on('close', () => closed++);
    write(res, req.url.endsWith('/chat/completions'));
  },
  { file: (url) => ({ models: { m1: { upstream: url, contextWindow: WINDOW } } }) },
);

/** One token an event, without end, until toolproof hangs up. */
const endless: Write = (res, chat) => writeEndless(res, chat);

/** n choices of `tokens` events each, interleaved, then the finish events and [DONE]. */
const bounded =
  (tokens: number, n: number): Write =>
  (res, chat) =>
    writeBounded(res, chat, tokens, n);

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
const doors = {
  '/v1/completions (relayed)': (extra: object) => ({
    path: '/v1/completions',
    body: { model: 'm1', stream: true, prompt: 'hi', ...extra },
  }),
  'chat without tools (relayed)': (extra: object) => ({
    path: '/v1/chat/completions',
    body: { model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }], ...extra },
  }),
  'chat with tools': (extra: object) => ({
    path: '/v1/chat/completions',
    body: { model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }], tools, ...extra },
  }),
};
type Door = keyof typeof doors;

async function post(door: Door, extra: object): Promise<Response> {
  const { path, body } = doors[door](extra);
  return fetch(pair.proxy.origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
}

describe('/v1/completions: n', () => {
  it('an n past 128 is a 400 naming n, in the API shape, never sent upstream', async () => {
    write = bounded(1, 1);
    const before = reached;
    const res = await post('/v1/completions (relayed)', { n: 1_000_000, max_tokens: 50 });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; type: string } };
    expect(body.error.message).toMatch(/\bn\b/);
    expect(body.error.type).toBe('invalid_request_error');
    expect(reached).toBe(before);
  });

  it('n of 128 is taken', async () => {
    write = bounded(2, 128);
    const res = await post('/v1/completions (relayed)', { n: 128, max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('did not stop');
  });
});

describe.each(Object.keys(doors) as Door[])('%s, the model window known', (door) => {
  it.each([
    ['no max_tokens', {}],
    ['a max_tokens of a billion', { max_tokens: 1_000_000_000 }],
  ])('%s, an upstream that never stops: hung up on, the error event naming the window', async (_, extra) => {
    write = endless;
    closed = 0;
    const res = await post(door, extra);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('did not stop where it was asked to');
    expect(text).toContain(`${WINDOW}-token context window`);
    await expect.poll(() => closed).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(2 << 20);
  });

  it('an answer that fills the window, two choices, ends as before', async () => {
    write = bounded(WINDOW, 2);
    const res = await post(door, { n: 2 });
    const text = await res.text();
    expect(text).not.toContain('did not stop');
    expect(text).not.toMatch(/"type":"error"|event: error|"error":\{/);
  });
});
