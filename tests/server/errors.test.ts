import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { readSse, type Stack, startStack, waitFor } from './stack.js';

const chat = (stack: Stack, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

function expectOpenAIError(json: unknown, type?: string): void {
  expect(json).toMatchObject({ error: { message: expect.any(String), type: expect.any(String) } });
  const err = (json as { error: Record<string, unknown> }).error;
  expect(err).toHaveProperty('param');
  expect(err).toHaveProperty('code');
  if (type) expect(err.type).toBe(type);
}

describe('errors the proxy itself produces', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'vllm', scenario: 'prose' },
      env: { TOOLPROOF_BODY_LIMIT_BYTES: '4096' },
    });
  });
  afterAll(() => stack.close());

  it('malformed JSON -> 400 invalid_request_error', async () => {
    const res = await chat(stack, '{"model": "x", "messages": [');
    expect(res.status).toBe(400);
    const json = await res.json();
    expectOpenAIError(json, 'invalid_request_error');
    expect((json as { error: { code: string } }).error.code).toBe('TP_ERR_INVALID_JSON');
  });

  it('wrong field type -> 400 naming the field', async () => {
    const res = await chat(stack, { model: 'x', messages: [{ role: 'user', content: 'hi' }], stream: 'yes' });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { param: string; message: string } };
    expectOpenAIError(json, 'invalid_request_error');
    expect(json.error.param).toBe('stream');
    expect(json.error.message).toContain('stream');
  });

  it('missing messages -> 400 naming the field', async () => {
    const res = await chat(stack, { model: 'x' });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { param: string } };
    expect(json.error.param).toBe('messages');
  });

  it('body too large -> 413', async () => {
    const res = await chat(stack, { model: 'x', messages: [{ role: 'user', content: 'x'.repeat(10_000) }] });
    expect(res.status).toBe(413);
    expectOpenAIError(await res.json(), 'invalid_request_error');
  });

  it('unknown route -> relayed to the upstream, whose own 404 comes back as it is', async () => {
    const res = await fetch(`${stack.url}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
    expect(stack.sim.requests.at(-1)?.path).toBe('/v1/nope');
  });

  it('honours and returns x-request-id', async () => {
    const res = await chat(
      stack,
      { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-request-id': 'req-abc.123' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-abc.123');
    expect(stack.sim.requests.at(-1)!.headers['x-request-id']).toBe('req-abc.123');
  });

  it('upstream 4xx is relayed with its status and message, in the OpenAI shape', async () => {
    const res = await chat(stack, {
      model: 'x',
      messages: [{ role: 'user', content: 'hi' }],
      tool_choice: 'bogus',
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const json = (await res.json()) as { error: { message: string; upstream: unknown } };
    expectOpenAIError(json);
    expect(json.error.upstream).toBeDefined();
  });
});

describe('API keys', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: 'key-one-123456,key-two-123456' } });
  });
  afterAll(() => stack.close());

  it('missing key -> 401', async () => {
    const res = await chat(stack, { model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(401);
    expectOpenAIError(await res.json(), 'authentication_error');
  });

  it('wrong key -> 401, right key (either, bearer or x-api-key) -> 200', async () => {
    const wrong = await chat(
      stack,
      { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: 'Bearer key-one-12345X' },
    );
    expect(wrong.status).toBe(401);
    const ok = await chat(
      stack,
      { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: 'Bearer key-two-123456' },
    );
    expect(ok.status).toBe(200);
    const ok2 = await chat(
      stack,
      { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': 'key-one-123456' },
    );
    expect(ok2.status).toBe(200);
  });

  it('/health stays public', async () => {
    expect((await fetch(`${stack.origin}/health`)).status).toBe(200);
  });
});

describe('model routing', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
    await stack.app.close();
    const config = loadConfig(
      {},
      { models: { 'qwen-small': { upstream: stack.sim.url, upstreamModel: 'Qwen/Qwen3-0.6B' } } },
    );
    const app = await buildApp(config, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    stack = {
      ...stack,
      app,
      url: `http://127.0.0.1:${port}/v1`,
      close: async () => {
        await app.close();
        await stack.sim.close();
      },
    };
  });
  afterAll(() => stack.close());

  it('unknown model -> 404 when the config maps models', async () => {
    const res = await chat(stack, { model: 'gpt-4', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(404);
    const json = (await res.json()) as { error: { param: string; message: string } };
    expectOpenAIError(json);
    expect(json.error.param).toBe('model');
    expect(json.error.message).toContain('qwen-small');
  });

  it('mapped model is renamed on the way upstream', async () => {
    const res = await chat(stack, { model: 'qwen-small', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect((stack.sim.requests.at(-1)!.body as { model: string }).model).toBe('Qwen/Qwen3-0.6B');
  });
});

describe('upstream failures', () => {
  let slow: Server;
  let slowUrl: string;
  beforeAll(async () => {
    // A backend that accepts connections and never answers.
    slow = createServer(() => {});
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    slow.closeAllConnections();
    await new Promise((r) => slow.close(r));
  });

  it('upstream unreachable -> 502', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${port}/v1` }), {
      logger: false,
    });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.statusCode).toBe(502);
    expectOpenAIError(res.json(), 'upstream_error');
    await app.close();
  });

  it('upstream first-byte timeout -> 504', async () => {
    const app = await buildApp(
      loadConfig({ TOOLPROOF_UPSTREAM_URL: slowUrl, TOOLPROOF_FIRST_BYTE_TIMEOUT_MS: '300' }),
      { logger: false },
    );
    const started = Date.now();
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.statusCode).toBe(504);
    expectOpenAIError(res.json(), 'timeout_error');
    expect(Date.now() - started).toBeLessThan(5_000);
    await app.close();
  });

  it('a replica that is down is skipped (BalancedPool keeps going)', async () => {
    const stack = await startStack();
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/v1`;
    await new Promise((r) => dead.close(r));
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: `${deadUrl},${stack.sim.url}` }), {
      logger: false,
    });
    for (let i = 0; i < 4; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.statusCode).toBe(200);
    }
    // Streamed: the body goes upstream as a one-shot source (undici keeps no copy of it); the
    // replica that refuses the connection is skipped the same way.
    for (let i = 0; i < 4; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('data: [DONE]');
      expect(res.body).not.toContain('"error"');
    }
    await app.close();
    await stack.close();
  });
});

describe('streams that go wrong', () => {
  it('an upstream that dies mid-stream before any of its answer went out: the 502, as not streamed', async () => {
    const stack = await startStack({
      sim: { scenario: [{ say: 'one two three four five six seven eight nine ten', dieAfterChunks: 3 }] },
    });
    const res = await chat(stack, { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    // The stream's headers wait for the first byte the client must see (sse-writer.ts open).
    expect(res.status).toBe(502);
    const err = (await res.json()) as { error: { type: string; code: string } };
    expect(err.error).toMatchObject({ type: 'upstream_error', code: 'TP_ERR_UPSTREAM_CUT_OFF' });
    await stack.close();
  });

  it('a stalled stream hits the idle timeout: error event and [DONE], no hang', async () => {
    const stack = await startStack({
      sim: { scenario: [{ say: 'one two three four five six seven eight', stallAfterChunks: 2 }] },
      env: { TOOLPROOF_IDLE_TIMEOUT_MS: '300' },
    });
    const started = Date.now();
    const res = await chat(stack, { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const events = await readSse(res);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(events.at(-1)).toBe('[DONE]');
    expect((JSON.parse(events.at(-2)!) as { error: { type: string } }).error.type).toBe('timeout_error');
    await stack.close();
  });

  it('an upstream error event mid-stream (llama-server style, no [DONE]) is normalized and closed with [DONE]', async () => {
    const stack = await startStack({
      sim: {
        personality: 'llama-server',
        scenario: [{ error: { status: 500, message: 'boom mid-stream', midStream: true } }],
      },
    });
    const res = await chat(stack, { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const err = JSON.parse(events.at(-2)!) as { error: { message: string; param: unknown } };
    expect(err.error.message).toContain('boom mid-stream');
    expect(err.error).toHaveProperty('param');
    await stack.close();
  });
});

describe('client disconnect aborts the upstream request', () => {
  it('while waiting for the first token (non-streaming)', async () => {
    const stack = await startStack({ sim: { scenario: [{ say: 'slow answer', delayMs: 2_000 }] } });
    const ac = new AbortController();
    const req = fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      signal: ac.signal,
    }).catch(() => null);
    await waitFor(() => stack.sim.requests.length >= 1);
    ac.abort();
    await req;
    await waitFor(() => stack.sim.aborts.length >= 1);
    expect(stack.sim.aborts[0]!.midStream).toBe(false);
    await stack.close();
  });

  it('mid-stream', async () => {
    const stack = await startStack({ sim: { scenario: [{ say: 'word '.repeat(200), chunkDelayMs: 20 }] } });
    const ac = new AbortController();
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    ac.abort();
    await waitFor(() => stack.sim.aborts.length >= 1);
    expect(stack.sim.aborts[0]!.midStream).toBe(true);
    expect(stack.sim.aborts[0]!.chunksSent).toBeLessThan(150);
    await stack.close();
  });
});

describe('pass-through streams relayed as raw bytes', () => {
  it('an error event split across reads after a relayed event is still normalized, with no torn lines', async () => {
    const upstream = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\ndata: {"err',
      );
      setTimeout(() => res.end('or":{"code":500,"message":"boom","type":"server_error"}}\n\n'), 30);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${port}/v1` }), {
      logger: false,
    });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const blocks = res.body.split('\n\n').filter(Boolean);
    for (const b of blocks) expect(b.startsWith('data: ')).toBe(true);
    const payloads = blocks.map((b) => b.slice(6));
    expect(JSON.parse(payloads[0]!).choices[0].delta.content).toBe('hi');
    expect(JSON.parse(payloads.at(-2)!)).toMatchObject({ error: { message: 'boom', param: null } });
    expect(payloads.at(-1)).toBe('[DONE]');
    expect(payloads.filter((p) => p === '[DONE]')).toHaveLength(1);
    await app.close();
    await new Promise((r) => upstream.close(r));
  });
});
