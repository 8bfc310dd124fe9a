/**
 * An upstream answer in a content coding toolproof never asked for (it sends no Accept-Encoding):
 * a proxy in front of the model server that gzips unasked. Read as it came, a gzipped body was
 * "not JSON" with its compressed bytes in the error, and a gzipped stream carried no event: the
 * relays (chat without tools, /v1/completions) sent the client an empty answer, or the gzip's
 * bytes, as a 200. Now every door and relay, streamed or not, refuses it in its own error shape
 * naming the coding, and hangs up on the upstream, and counts it in
 * toolproof_upstream_errors_total{kind="bad_response"} (the front doors did not, the relays did).
 */
import type { ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

let coding = 'gzip';
let closed = 0;
const pair = proxyInFrontOf((req, res: ServerResponse) => {
  res.on('close', () => closed++);
  const chat = req.url.endsWith('/chat/completions');
  const stream = (JSON.parse(req.body.toString('utf8')) as { stream?: boolean }).stream === true;
  const choice = chat
    ? stream
      ? { index: 0, delta: { content: 'hello' }, finish_reason: 'stop' }
      : { index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }
    : { index: 0, text: 'hello', finish_reason: 'stop' };
  const answer = {
    id: 'c',
    object: chat ? 'chat.completion' : 'text_completion',
    model: 'm1',
    choices: [choice],
  };
  const body = stream ? `data: ${JSON.stringify(answer)}\n\ndata: [DONE]\n\n` : JSON.stringify(answer);
  res.writeHead(200, {
    'content-type': stream ? 'text/event-stream' : 'application/json',
    ...(coding === 'identity' ? {} : { 'content-encoding': coding }),
  });
  res.end(coding === 'identity' ? body : gzipSync(body));
});

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
const doors = {
  'chat with tools': (stream: boolean) => ({
    path: '/v1/chat/completions',
    body: { model: 'm1', stream, messages: [{ role: 'user', content: 'hi' }], tools },
  }),
  'chat without tools': (stream: boolean) => ({
    path: '/v1/chat/completions',
    body: { model: 'm1', stream, messages: [{ role: 'user', content: 'hi' }] },
  }),
  '/v1/completions': (stream: boolean) => ({
    path: '/v1/completions',
    body: { model: 'm1', stream, prompt: 'hi' },
  }),
  messages: (stream: boolean) => ({
    path: '/v1/messages',
    body: { model: 'm1', stream, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
  }),
  responses: (stream: boolean) => ({ path: '/v1/responses', body: { model: 'm1', stream, input: 'hi' } }),
};
type Door = keyof typeof doors;

/** toolproof_upstream_errors_total{kind="bad_response"}, all series. */
async function badResponses(): Promise<number> {
  const text = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('toolproof_upstream_errors_total{') && l.includes('kind="bad_response"'))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function post(door: Door, stream: boolean): Promise<{ status: number; text: string }> {
  const { path, body } = doors[door](stream);
  const res = await fetch(pair.proxy.origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}

describe.each(Object.keys(doors) as Door[])('%s', (door) => {
  it.each([false, true])(
    'a gzipped answer (stream: %s): refused naming the coding, in the door’s shape',
    async (stream) => {
      coding = 'gzip';
      closed = 0;
      const before = await badResponses();
      const { status, text } = await post(door, stream);
      // Counted once, as an upstream answer toolproof could not read.
      expect(await badResponses()).toBe(before + 1);
      expect(text).toContain('content-encoding \\"gzip\\"');
      expect(text).not.toContain('\u001f\ufffd'); // no compressed bytes passed on
      expect(text).not.toContain('hello'); // nor an answer made of it
      if (status === 200) {
        // A stream already open: the door's error event.
        expect(text).toMatch(
          door === 'messages'
            ? /event: error/
            : door === 'responses'
              ? /response\.failed/
              : /"code":"TP_ERR_UPSTREAM_BAD_RESPONSE"/,
        );
      } else {
        expect(status).toBe(502);
        const body = JSON.parse(text) as Record<string, unknown>;
        if (door === 'messages') expect(body).toMatchObject({ type: 'error', error: { type: 'api_error' } });
        else expect(body.error).toMatchObject({ code: 'TP_ERR_UPSTREAM_BAD_RESPONSE' });
      }
      await expect.poll(() => closed).toBeGreaterThan(0);
    },
  );

  it('content-encoding identity is no coding: the answer as before', async () => {
    coding = 'identity';
    const { status, text } = await post(door, false);
    expect(status).toBe(200);
    expect(text).toContain('hello');
  });
});
