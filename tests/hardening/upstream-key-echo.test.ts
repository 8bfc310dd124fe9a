/**
 * An upstream that repeats the Authorization header it got (an error "invalid key Bearer sk-…",
 * a body that quotes it): toolproof's own upstream key must not reach the client, the log line
 * or the capture, on any door, streamed or not, nor through the pass-through. The key is
 * replaced by a fixed marker where the upstream's bytes are read (server/upstream-secrets.ts).
 */
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SCRUBBED_KEY } from '../../server/upstream-secrets.js';
import { chunkEvent, proxyInFrontOf, type Recorded, sendCompletion } from '../support/harness.js';

const KEY = 'sk-upstream-SECRET-0123456789';
let mode: 'error' | 'content' | 'mid-stream-error' = 'error';
const logLines: string[] = [];
const log = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});

function answer(req: Recorded, res: ServerResponse): void {
  const auth = String(req.headers.authorization ?? 'none');
  if (!req.url.endsWith('/chat/completions')) {
    // The pass-through's routes: the header quoted in a body, cut in two writes inside the key.
    res.writeHead(200, { 'content-type': 'application/json', 'x-echo': `got ${auth}` });
    const body = JSON.stringify({ object: 'list', data: [], you_sent: auth });
    const cut = body.indexOf(KEY) + 7;
    res.write(body.slice(0, cut));
    setTimeout(() => res.end(body.slice(cut)), 20);
    return;
  }
  const stream = (JSON.parse(req.body.toString()) as { stream?: boolean }).stream === true;
  if (mode === 'error') {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { message: `invalid api key: ${auth}`, type: 'auth_error', code: 401 } }),
    );
    return;
  }
  const content = `the header was ${auth}`;
  if (!stream) {
    sendCompletion(res, { content });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (mode === 'mid-stream-error') {
    res.write(chunkEvent({ role: 'assistant', content: 'hi' }));
    res.end(`data: ${JSON.stringify({ error: { message: `invalid api key: ${auth}`, code: 500 } })}\n\n`);
    return;
  }
  // The key's bytes split over two writes (two chunks on toolproof's side).
  const events = chunkEvent({ role: 'assistant', content }) + chunkEvent({}, 'stop');
  const cut = events.indexOf(KEY) + 5;
  res.write(events.slice(0, cut));
  setTimeout(() => res.end(`${events.slice(cut)}data: [DONE]\n\n`), 20);
}

const pair = proxyInFrontOf(answer, {
  env: { TOOLPROOF_UPSTREAM_API_KEY: KEY },
  log,
});

const doors = {
  chat: (stream: boolean) => ({
    path: '/v1/chat/completions',
    body: { model: 'm1', stream, messages: [{ role: 'user', content: 'hi' }] },
  }),
  responses: (stream: boolean) => ({ path: '/v1/responses', body: { model: 'm1', stream, input: 'hi' } }),
  messages: (stream: boolean) => ({
    path: '/v1/messages',
    body: { model: 'm1', stream, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
  }),
};

async function ask(path: string, body: unknown): Promise<string> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.text();
}

describe('toolproof never relays its own upstream key', () => {
  for (const [door, request] of Object.entries(doors))
    for (const stream of [false, true])
      for (const m of ['error', 'content', ...(stream ? ['mid-stream-error' as const] : [])] as const)
        it(`${door}, ${stream ? 'streamed' : 'not streamed'}: ${m}`, async () => {
          mode = m;
          const { path, body } = request(stream);
          const text = await ask(path, body);
          expect(pair.upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
          expect(text).not.toContain(KEY);
          // The message or answer did come through, with the marker where the key was.
          expect(text).toContain(SCRUBBED_KEY);
        });

  it('the pass-through: a body quoting the key, split inside it, and a header', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/rerank`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', input: 'x' }),
    });
    const text = await res.text();
    expect(res.headers.get('x-echo')).toBe(`got Bearer ${SCRUBBED_KEY}`);
    expect(text).not.toContain(KEY);
    expect(JSON.parse(text).you_sent).toBe(`Bearer ${SCRUBBED_KEY}`);
  });

  it('the relayed routes (embeddings): the same body', async () => {
    const text = await ask('/v1/embeddings', { model: 'm1', input: 'x' });
    expect(text).not.toContain(KEY);
    expect(JSON.parse(text).you_sent).toBe(`Bearer ${SCRUBBED_KEY}`);
  });

  it('nor does the capture the inspector shows', async () => {
    const list = (await (await fetch(`${pair.proxy.origin}/inspect/api/requests`)).json()) as {
      requests: Array<{ id: string }>;
    };
    expect(list.requests.length).toBeGreaterThan(10);
    let all = '';
    for (const r of list.requests)
      all += await (await fetch(`${pair.proxy.origin}/inspect/api/requests/${r.id}`)).text();
    expect(all).toContain(SCRUBBED_KEY);
    expect(all).not.toContain(KEY);
  });

  it('and the log lines never carry it', async () => {
    mode = 'error';
    await ask('/v1/chat/completions', doors.chat(false).body);
    expect(logLines.join('').length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(KEY);
  });
});
