/**
 * Upstream bodies over 64 KiB sent chunked (no Content-Length), as nginx with gzip on or any
 * proxy that re-chunks sends them, on every front door and relay that reads a body whole: chat,
 * Responses, Messages, count_tokens, /v1/embeddings, /v1/completions, /v1/models, error bodies,
 * and the pass-through. They used to hang for ever: the body reader resumed undici before it
 * registered its wake-up, the resumed parser delivered the rest and the end inside that call,
 * and the wake-up was lost (see UpstreamBody.waitForMore). Also: a chunked body that stalls
 * past 64 KiB ends with the idle timeout (a paused parser never reached it).
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, type Recorded } from '../support/harness.js';

const BIG = 200 * 1024;
const IDLE_MS = 800;

/** Writes `text` as many small HTTP chunks in one go (they reach the proxy in a few socket reads). */
function sendChunked(res: ServerResponse, status: number, text: string, stallAfter?: number): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  const bytes = Buffer.from(text);
  const end = stallAfter ?? bytes.length;
  for (let at = 0; at < end; at += 4096) res.write(bytes.subarray(at, Math.min(end, at + 4096)));
  if (stallAfter === undefined) res.end();
  // else: the rest never comes (the socket stays open until the test closes the upstream)
}

function completion(content: string): string {
  return JSON.stringify({
    id: 'chatcmpl-big',
    object: 'chat.completion',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
}

const longText = 'word '.repeat(BIG / 5);

/** What the fake upstream answers: a status, a body, and where it stalls (if it does). */
function answer(req: Recorded): [number, string, number?] {
  const body = req.body.length > 0 ? (JSON.parse(req.body.toString('utf8')) as { model?: string }) : {};
  const url = req.url;
  if (body.model === 'stall') return [200, completion(longText), 100 * 1024];
  if (body.model === 'fails') {
    return [
      400,
      JSON.stringify({ error: { message: 'too long', type: 'BadRequestError', detail: longText } }),
    ];
  }
  if (url === '/tokenize') return [200, JSON.stringify({ count: 30_000, tokens: Array(30_000).fill(12345) })];
  if (url === '/v1/models') {
    const data = Array.from({ length: 3_000 }, (_, i) => ({ id: `model-${i}`, object: 'model' }));
    return [200, JSON.stringify({ object: 'list', data })];
  }
  if (url === '/v1/embeddings') {
    const embedding = Array.from({ length: 20_000 }, (_, i) => i / 7);
    return [200, JSON.stringify({ object: 'list', data: [{ embedding, index: 0 }] })];
  }
  if (url === '/v1/completions') {
    return [200, JSON.stringify({ object: 'text_completion', choices: [{ text: longText }] })];
  }
  if (url === '/v1/big-file') return [200, JSON.stringify({ blob: longText })];
  return [200, completion(longText)];
}

function handler(req: Recorded, res: ServerResponse): void {
  const [status, text, stallAfter] = answer(req);
  sendChunked(res, status, text, stallAfter);
}

const pair = proxyInFrontOf(handler, { env: { TOOLPROOF_IDLE_TIMEOUT_MS: String(IDLE_MS) } });

async function call(
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown>; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, json, ms: performance.now() - started };
}

const messages = [{ role: 'user', content: 'write a long answer' }];

describe('chunked upstream bodies over 64 KiB are read whole on every front door', () => {
  it('chat completions', async () => {
    const r = await call('/v1/chat/completions', { model: 'm1', messages });
    expect(r.status).toBe(200);
    const choices = r.json.choices as Array<{ message: { content: string } }>;
    expect(choices[0]!.message.content).toBe(longText);
  });

  it('/v1/responses', async () => {
    const r = await call('/v1/responses', { model: 'm1', input: 'write a long answer' });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.json.output)).toContain(longText);
  });

  it('/v1/messages', async () => {
    const r = await call('/v1/messages', { model: 'm1', max_tokens: 64, messages });
    expect(r.status).toBe(200);
    expect((r.json.content as Array<{ text: string }>)[0]!.text).toBe(longText);
  });

  it('/v1/messages/count_tokens (the upstream /tokenize answer)', async () => {
    const r = await call('/v1/messages/count_tokens', { model: 'm1', messages });
    expect(r.status).toBe(200);
    expect(r.json.input_tokens).toBe(30_000);
  });

  it('/v1/embeddings and /v1/completions relays', async () => {
    const e = await call('/v1/embeddings', { model: 'm1', input: 'x' });
    expect(e.status).toBe(200);
    expect((e.json.data as Array<{ embedding: number[] }>)[0]!.embedding).toHaveLength(20_000);
    const c = await call('/v1/completions', { model: 'm1', prompt: 'x' });
    expect(c.status).toBe(200);
    expect((c.json.choices as Array<{ text: string }>)[0]!.text).toBe(longText);
  });

  it('/v1/models', async () => {
    const r = await call('/v1/models');
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(3_000);
  });

  it('error bodies on chat, Responses and Messages', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'fails', messages }],
      ['/v1/responses', { model: 'fails', input: 'x' }],
      ['/v1/messages', { model: 'fails', max_tokens: 64, messages }],
    ] as const) {
      const r = await call(path, body);
      expect(r.status, path).toBe(400);
      expect(JSON.stringify(r.json), path).toContain('too long');
    }
  });

  it('the pass-through', async () => {
    const r = await call('/v1/big-file');
    expect(r.status).toBe(200);
    expect(r.json.blob).toBe(longText);
  });

  it('a chunked body that stalls past 64 KiB ends with the idle timeout (504), on every front door', async () => {
    const doors = [
      ['/v1/chat/completions', { model: 'stall', messages }],
      ['/v1/responses', { model: 'stall', input: 'x' }],
      ['/v1/messages', { model: 'stall', max_tokens: 64, messages }],
      ['/v1/completions', { model: 'stall', prompt: 'x' }],
    ] as const;
    // All four at once: each waits out its own idle timer (one after another, 3.2 s of waiting).
    const results = await Promise.all(doors.map(([path, body]) => call(path, body)));
    for (const [i, r] of results.entries()) {
      const path = doors[i]![0];
      expect(r.status, path).toBe(504);
      // undici's body timer has a coarse clock: only "it ended, well before the client gave up".
      expect(r.ms, path).toBeLessThan(IDLE_MS + 3_000);
    }
  });
});
