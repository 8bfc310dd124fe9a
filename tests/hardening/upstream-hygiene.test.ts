/**
 * What the upstream says stays where it belongs.
 * - Logs: an upstream's error message is cut and its echoed input values are redacted
 *   (validation errors from Python backends repeat the prompt: `'input': '...'`, `input_value=`;
 *   redactForLog itself: tests/server/log-redact.test.ts).
 * - Pass-through responses: the upstream's Set-Cookie, WWW-Authenticate, Server, X-Powered-By
 *   and Alt-Svc do not reach the client (docs/security.md).
 * - Pass-through requests: X-Forwarded-For and Forwarded get the peer appended, X-Real-IP is the
 *   peer, as a reverse proxy sets them, instead of the client's own values unchanged.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { logCapture } from '../server/test-utils.js';
import { proxyInFrontOf, type Recorded } from '../support/harness.js';

const SECRET = 'my bank password is hunter2';

const { stream, lines } = logCapture();

function handler(req: Recorded, res: ServerResponse): void {
  if (req.url.startsWith('/v1/chat/completions')) {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        object: 'error',
        type: 'BadRequestError',
        code: 400,
        message: `[{'type': 'string_type', 'loc': ('body', 'messages', 0, 'content'), 'msg': 'Input should be a valid string', 'input': {'text': '${SECRET}'}}]`,
      }),
    );
    return;
  }
  res.writeHead(200, {
    'content-type': 'application/json',
    'set-cookie': ['session=upstream-secret; Path=/', 'other=1'],
    'www-authenticate': 'Bearer realm="vllm"',
    server: 'uvicorn',
    'x-powered-by': 'FastAPI',
    'alt-svc': 'h3=":443"',
    'x-upstream-kept': 'yes',
  });
  res.end(JSON.stringify({ headers: req.headers }));
}

const pair = proxyInFrontOf(handler, { log: stream });

describe('upstream error messages in logs', () => {
  it('the request line keeps the error, without the prompt the upstream echoed', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'echo-1' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: SECRET }] }),
    });
    expect(res.status).toBe(400);
    // The client still gets the upstream's own message: it is its own prompt.
    expect(await res.text()).toContain('hunter2');
    await new Promise((r) => setTimeout(r, 20));
    const line = lines.find((l) => l.reqId === 'echo-1' && l.msg === 'request')!;
    expect(line.error).toMatchObject({ code: 'TP_ERR_UPSTREAM_ERROR', status: 400 });
    expect((line.error as { message: string }).message).toContain('Input should be a valid string');
    expect(JSON.stringify(lines)).not.toContain('hunter2');
  });
});

describe('the pass-through as a reverse proxy', () => {
  it("drops the upstream's cookies, challenge and fingerprint; keeps its other headers", async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/anything`);
    expect(res.status).toBe(200);
    for (const h of ['set-cookie', 'www-authenticate', 'server', 'x-powered-by', 'alt-svc'])
      expect(res.headers.get(h), h).toBeNull();
    expect(res.headers.get('x-upstream-kept')).toBe('yes');
  });

  it('appends the peer to X-Forwarded-For and Forwarded, and sets X-Real-IP to it', async () => {
    const plain = (await (await fetch(`${pair.proxy.origin}/v1/anything`)).json()) as {
      headers: Record<string, string>;
    };
    expect(plain.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(plain.headers.forwarded).toBe('for=127.0.0.1;proto=http');
    expect(plain.headers['x-real-ip']).toBe('127.0.0.1');

    const spoofed = (await (
      await fetch(`${pair.proxy.origin}/v1/anything`, {
        headers: { 'x-forwarded-for': '10.0.0.1', forwarded: 'for=10.0.0.1', 'x-real-ip': '10.9.9.9' },
      })
    ).json()) as { headers: Record<string, string> };
    expect(spoofed.headers['x-forwarded-for']).toBe('10.0.0.1, 127.0.0.1');
    expect(spoofed.headers.forwarded).toBe('for=10.0.0.1, for=127.0.0.1;proto=http');
    expect(spoofed.headers['x-real-ip']).toBe('127.0.0.1');
  });
});
