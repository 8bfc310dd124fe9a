/**
 * Routes toolproof does not own are relayed to the model's upstream as they are (method, path,
 * query, body bytes, content type; status, headers minus hop-by-hop, body), with the upstream's
 * own key, and without escaping the upstream's origin whatever the path says.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeUpstream,
  fakeUpstream,
  httpRequest,
  type Recorded,
  type RunningProxy,
  rawRequest,
  startProxy,
} from '../support/harness.js';

const KEY = 'client-key-123456';
const auth = { authorization: `Bearer ${KEY}` };
let a: FakeUpstream;
let b: FakeUpstream;
let evil: FakeUpstream;
let proxy: RunningProxy;
let hanging: { closed: boolean } = { closed: false };

function handler(req: Recorded, res: ServerResponse): void {
  if (req.url === '/v1/hang') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":1}\n\n');
    res.on('close', () => {
      hanging.closed = true;
    });
    return;
  }
  if (req.url === '/v1/big') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 2_000; i++) res.write(`data: ${JSON.stringify({ i, pad: 'p'.repeat(1000) })}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  if (req.url === '/v1/not-sse') {
    // Reads like an event stream, but is not one: relayed whole, [DONE] or not.
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('data: [DONE]\n\ndata: after\n\n\r\n\u00e9');
    return;
  }
  if (req.url === '/v1/unprocessable') {
    res.writeHead(422, { 'content-type': 'application/json', 'x-backend': 'vllm' });
    res.end('{"detail":"bad"}');
    return;
  }
  res.writeHead(201, {
    'content-type': 'application/octet-stream',
    'x-upstream': 'a',
    'keep-alive': 'timeout=5',
  });
  res.end(Buffer.concat([Buffer.from(`${req.method} ${req.url}\n`), req.body]));
}

beforeAll(async () => {
  a = await fakeUpstream(handler);
  b = await fakeUpstream(handler);
  evil = await fakeUpstream();
  proxy = await startProxy(
    { TOOLPROOF_UPSTREAM_URL: a.url, TOOLPROOF_UPSTREAM_API_KEY: 'key-a', TOOLPROOF_API_KEYS: KEY },
    { models: { bee: { upstream: b.url, apiKey: 'key-b', upstreamModel: 'org/bee-7b' } } },
  );
});
afterAll(async () => {
  await proxy.close();
  await Promise.all([a.close(), b.close(), evil.close()]);
});

async function send(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${proxy.origin}${path}`, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });
}

describe('pass-through', () => {
  it('non-/v1 paths go to the origin, with method, query, body bytes and content type', async () => {
    const body = '{"model":"m1","prompt":"héllo"}';
    const res = await send('/tokenize?add_special_tokens=false', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-upstream')).toBe('a');
    expect(res.headers.get('keep-alive')).not.toBe('timeout=5'); // hop-by-hop: toolproof's own
    expect(await res.text()).toBe(`POST /tokenize?add_special_tokens=false\n${body}`);
    const got = a.requests.at(-1)!;
    expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(got.body.toString('utf8')).toBe(body);
  });

  it('/v1/x goes to the base URL + /x; GET without a body; the upstream key, never the client key', async () => {
    const res = await send('/v1/files/f1?x=1', {
      headers: { 'x-api-key': KEY, 'x-sim-scenario': 'prose', cookie: 'c=1', 'x-trace': 't' },
    });
    expect(res.status).toBe(201);
    const got = a.requests.at(-1)!;
    expect(got.method).toBe('GET');
    expect(got.url).toBe('/v1/files/f1?x=1');
    expect(got.headers.authorization).toBe('Bearer key-a');
    expect(got.headers['x-api-key']).toBeUndefined();
    expect(got.headers['x-sim-scenario']).toBeUndefined(); // simulator-only, not for a real upstream
    expect(got.headers.cookie).toBeUndefined();
    expect(got.headers['x-trace']).toBe('t');
    expect(got.headers['x-request-id']).toBe(res.headers.get('x-request-id'));
  });

  it('multipart bodies (audio) pass through as bytes', async () => {
    const form = new FormData();
    form.append('model', 'm1');
    form.append('file', new Blob([new Uint8Array([0, 255, 1, 254, 13, 10])]), 'a.wav');
    const res = await send('/v1/audio/transcriptions', { method: 'POST', body: form });
    expect(res.status).toBe(201);
    const got = a.requests.at(-1)!;
    expect(got.url).toBe('/v1/audio/transcriptions');
    expect(String(got.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
    expect(got.body.includes(Buffer.from([0, 255, 1, 254, 13, 10]))).toBe(true);
  });

  it('a JSON body naming a YAML model goes to that model upstream, renamed, with its own key', async () => {
    const res = await send('/v1/rerank', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bee', query: 'q', documents: ['d'] }),
    });
    expect(res.status).toBe(201);
    const got = b.requests.at(-1)!;
    expect(got.url).toBe('/v1/rerank');
    expect(got.headers.authorization).toBe('Bearer key-b');
    expect(JSON.parse(got.body.toString())).toEqual({ model: 'org/bee-7b', query: 'q', documents: ['d'] });
  });

  it('a form naming a YAML model goes to that model upstream, its field renamed, the file untouched', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array([0, 255, 1, 254, 13, 10])]), 'a.wav');
    form.append('model', 'bee');
    const res = await send('/v1/audio/transcriptions', { method: 'POST', body: form });
    expect(res.status).toBe(201);
    const got = b.requests.at(-1)!;
    expect(got.headers.authorization).toBe('Bearer key-b');
    const text = got.body.toString('latin1');
    expect(text).toMatch(/name="model"\r\n\r\norg\/bee-7b\r\n--/);
    expect(got.body.includes(Buffer.from([0, 255, 1, 254, 13, 10]))).toBe(true);
    const encoded = await send('/v1/audio/translations', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'model=bee&language=en',
    });
    expect(encoded.status).toBe(201);
    expect(b.requests.at(-1)!.body.toString()).toBe('model=org%2Fbee-7b&language=en');
  });

  it('the upstream status, headers and body come back as they are (errors too)', async () => {
    const res = await send('/v1/unprocessable', { method: 'POST', body: 'not json at all' });
    expect(res.status).toBe(422);
    expect(res.headers.get('x-backend')).toBe('vllm');
    expect(await res.text()).toBe('{"detail":"bad"}');
    expect(a.requests.at(-1)!.body.toString()).toBe('not json at all');
  });

  it('a body that is not an event stream is relayed byte for byte past a [DONE] line', async () => {
    const res = await send('/v1/not-sse', { method: 'POST' });
    expect(Buffer.from(await res.arrayBuffer())).toEqual(
      Buffer.from('data: [DONE]\n\ndata: after\n\n\r\n\u00e9'),
    );
  });

  it('a large streamed response arrives whole', async () => {
    const res = await send('/v1/big', { method: 'POST' });
    const text = await res.text();
    expect(text.split('\n\n').filter(Boolean)).toHaveLength(2_001);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('a client that goes away cancels the upstream request', async () => {
    hanging = { closed: false };
    const controller = new AbortController();
    const res = await send('/v1/hang', { method: 'POST', signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const start = Date.now();
    while (!hanging.closed && Date.now() - start < 5_000) await new Promise((r) => setTimeout(r, 20));
    expect(hanging.closed).toBe(true);
  });

  it('paths cannot escape the upstream origin', async () => {
    const evilPort = new URL(evil.origin).port;
    const targets: Array<[string, string]> = [
      [`http://127.0.0.1:${evilPort}/v1/x`, '/v1/x'],
      // A leading '//' is an empty segment of a path (RFC 9112 origin-form), never a host.
      [`//127.0.0.1:${evilPort}/x`, `/127.0.0.1:${evilPort}/x`],
      ['/v1/../../../etc/passwd', '/etc/passwd'],
      ['/v1/%2e%2e/%2e%2e/secret', '/secret'],
      // %2F is '/' (as uvicorn and cpp-httplib read it) before dot segments are resolved.
      ['/v1/a/..%2f..%2fb', '/b'],
    ];
    for (const [target, expected] of targets) {
      const res = await rawRequest(proxy.port, httpRequest('GET', target, '', auth));
      expect(res.status, target).toBe(201);
      expect(a.requests.at(-1)!.url, target).toBe(expected);
    }
    expect(evil.requests).toHaveLength(0);
  });

  it('CRLF in the request target never reaches the upstream as a header', async () => {
    const res = await rawRequest(
      proxy.port,
      `GET /tokenize%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\n\r\n`,
    );
    expect(res.status).toBe(201);
    expect(a.requests.at(-1)!.headers['x-injected']).toBeUndefined();
  });

  it('an unreachable upstream is a 502 in the OpenAI error shape', async () => {
    const p = await startProxy({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });
    try {
      const res = await fetch(`${p.origin}/tokenize`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        'TP_ERR_UPSTREAM_UNREACHABLE',
      );
    } finally {
      await p.close();
    }
  });

  it('counted with api="passthrough" in the request metrics', async () => {
    await (await fetch(`${proxy.origin}/health`)).text();
    const text = await (await fetch(`${proxy.origin}/metrics`)).text();
    expect(text).toMatch(
      /toolproof_requests_total\{model="",route="other",status="201",api="passthrough"\} \d+/,
    );
    expect(text).toMatch(
      /toolproof_requests_total\{model="bee",route="other",status="201",api="passthrough"\} 3/,
    );
    expect(text).toMatch(/toolproof_requests_total\{model="",route="health",status="200",api="ops"\} 1/);
  });
});
