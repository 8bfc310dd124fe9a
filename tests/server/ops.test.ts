import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator } from '../../simulator/index.js';
import { readSse, startStack, weatherTool } from './stack.js';
import { logCapture } from './test-utils.js';

describe('ops endpoints', () => {
  it('/health, /ready, /metrics, /docs and /docs/json', async () => {
    const stack = await startStack();
    expect(await (await fetch(`${stack.origin}/health`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${stack.origin}/ready`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { upstreams: unknown[] }).upstreams).toHaveLength(1);

    await stack.client.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toContain('process_cpu_user_seconds_total');
    expect(metrics).toMatch(
      /toolproof_requests_total\{model="m1",route="chat\/completions",status="200",api="chat"\} 1/,
    );
    expect(metrics).toMatch(
      /toolproof_upstream_duration_seconds_count\{model="m1",route="chat",upstream="[^"]+"\} 1/,
    );

    const doc = (await (await fetch(`${stack.origin}/docs/json`)).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toMatch(/^3\./);
    for (const p of [
      '/v1/chat/completions',
      '/v1/completions',
      '/v1/embeddings',
      '/v1/models',
      '/health',
      '/ready',
      '/metrics',
    ]) {
      expect(doc.paths).toHaveProperty(p);
    }
    const ui = await fetch(`${stack.origin}/docs`);
    expect(ui.status).toBeLessThan(400);
    await stack.close();
  });

  it('/ready is 503 when an upstream does not answer', async () => {
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
      logger: false,
    });
    const res = await app.inject({ url: '/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ status: 'not_ready' });
    await app.close();
  });
});

describe('the per-request log line', () => {
  it('one JSON line per request with id, model, upstream, status, latency, usage and the harness trace; no keys', async () => {
    const sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    const { stream, lines } = logCapture();
    const app = await buildApp(
      loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_API_KEYS: 'secret-key-123' }),
      {
        logger: { level: 'info', stream },
      },
    );
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer secret-key-123', 'x-request-id': 'trace-42' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [weatherTool] },
    });
    expect(res.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 20));
    const mine = lines.filter((l) => l.reqId === 'trace-42');
    expect(mine).toHaveLength(1);
    const line = mine[0]!;
    expect(line).toMatchObject({ model: 'm', status: 200, stream: false, upstream: sim.url, api: 'chat' });
    expect(line.latencyMs).toEqual(expect.any(Number));
    expect(line.usage).toMatchObject({ total_tokens: expect.any(Number) });
    expect(line.harness).toMatchObject({
      forced: true,
      toolChoice: 'required',
      fallback: false,
      attempts: 1,
      final: 'final_answer',
    });
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer secret-key-123', 'x-request-id': 'trace-43' },
      payload: '{"model":',
    });
    expect(bad.statusCode).toBe(400);
    await new Promise((r) => setTimeout(r, 20));
    expect(lines.find((l) => l.reqId === 'trace-43')).toMatchObject({
      status: 400,
      error: { code: 'TP_ERR_INVALID_JSON', status: 400 },
    });
    const tok = await app.inject({
      method: 'POST',
      url: '/tokenize',
      headers: { authorization: 'Bearer secret-key-123', 'x-request-id': 'trace-44' },
      payload: { model: 'm', prompt: 'hi' },
    });
    expect(tok.statusCode).toBeLessThan(500);
    await new Promise((r) => setTimeout(r, 20));
    expect(lines.find((l) => l.reqId === 'trace-44')).toMatchObject({
      api: 'passthrough',
      route: '/tokenize',
    });
    expect(JSON.stringify(lines)).not.toContain('secret-key-123');
    await app.close();
    await sim.close();
  });
});

describe('graceful shutdown', () => {
  it('stops accepting new requests but lets an open stream finish', async () => {
    const sim = await createSimulator({
      personality: 'vllm',
      scenario: [{ say: 'word '.repeat(30), chunkDelayMs: 15 }],
    });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/chat/completions`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const closing = app.close();
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.length).toBeGreaterThan(20);
    await closing;
    await expect(fetch(url, { method: 'POST', body: '{}' })).rejects.toThrow();
    await sim.close();
  });
});

describe('graceful shutdown with keep-alive clients', () => {
  it("a stream that ends while closing does not hold the close for the client's keep-alive", async () => {
    const sim = await createSimulator({
      personality: 'vllm',
      scenario: [{ say: 'word '.repeat(10), chunkDelayMs: 10 }],
    });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/chat/completions`;
    // A client that would keep an idle connection for a minute.
    const agent = new Agent({ keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
    const res = await undiciFetch(url, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    let closed = false;
    const closing = app.close().then(() => {
      closed = true;
    });
    expect(await res.text()).toContain('[DONE]');
    // Without closing the connection that went idle, the close waits for the client (60 s).
    await Promise.race([closing, new Promise((r) => setTimeout(r, 5_000))]);
    expect(closed).toBe(true);
    await agent.close();
    await sim.close();
  });
});

describe('raw upstream dumps (diagnosis)', () => {
  it("TOOLPROOF_RAW_DUMP_DIR saves each attempt's raw upstream response", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolproof-raw-'));
    const stack = await startStack({
      sim: { scenario: 'leak-hermes' },
      env: { TOOLPROOF_RAW_DUMP_DIR: dir },
      file: { defaults: { forceToolUse: false } },
    });
    await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'dump-1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [weatherTool] }),
    });
    expect(readdirSync(dir)).toEqual(['dump-1.1.txt']);
    expect(readFileSync(join(dir, 'dump-1.1.txt'), 'utf8')).toContain('<tool_call>');
    await stack.close();
  });
});

describe('streamed responses are counted like non-streamed ones', () => {
  it('responses_total by kind and a raw dump for a streamed attempt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolproof-raw-'));
    const stack = await startStack({
      sim: { scenario: 'leak-hermes' },
      env: { TOOLPROOF_RAW_DUMP_DIR: dir },
      file: { defaults: { forceToolUse: false } },
    });
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'stream-1' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
      }),
    });
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    await new Promise((r) => setTimeout(r, 20));
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_responses_total\{model="m",kind="tool_calls",api="chat"\} 1/);
    expect(metrics).toMatch(
      /toolproof_leaks_total\{model="m",format="hermes",source="content",outcome="recovered",api="chat"\} 1/,
    );
    const dump = readFileSync(join(dir, 'stream-1.1.txt'), 'utf8');
    expect(dump).toMatch(/^data: /);
    const text = dump
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map(
        (b) =>
          (JSON.parse(b.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta
            .content ?? '',
      )
      .join('');
    expect(text).toContain('<tool_call>');
    await stack.close();
  });
});
