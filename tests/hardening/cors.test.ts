/**
 * Browser clients: preflights are answered (no key needed for the preflight itself) and
 * responses carry Access-Control-Allow-Origin, as vLLM and llama-server do by default;
 * TOOLPROOF_CORS_ORIGINS narrows the origins or turns CORS off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack } from '../server/stack.js';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

const KEY = 'client-key-123456';
let up: FakeUpstream;
beforeAll(async () => {
  up = await fakeUpstream();
});
afterAll(async () => {
  await up.close();
});

function preflight(origin: string, path = '/v1/chat/completions'): RequestInit & { path: string } {
  return {
    path,
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  };
}

async function withProxy(env: Record<string, string>, fn: (p: RunningProxy) => Promise<void>): Promise<void> {
  const p = await startProxy({ TOOLPROOF_UPSTREAM_URL: up.url, TOOLPROOF_API_KEYS: KEY, ...env });
  try {
    await fn(p);
  } finally {
    await p.close();
  }
}

describe('CORS', () => {
  it('default: any origin; preflight 204 without a key; responses carry the header, 401s too', async () => {
    await withProxy({}, async (p) => {
      const before = up.requests.length;
      for (const path of ['/v1/chat/completions', '/tokenize', '/v1/models']) {
        const { path: _p, ...init } = preflight('https://app.example', path);
        const res = await fetch(`${p.origin}${path}`, init);
        expect(res.status, path).toBe(204);
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
        expect(res.headers.get('access-control-allow-methods')).toContain('POST');
        expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
      }
      expect(up.requests.length).toBe(before); // preflights reach no upstream

      const denied = await fetch(`${p.origin}/v1/models/x`, { headers: { origin: 'https://app.example' } });
      expect(denied.status).toBe(401);
      expect(denied.headers.get('access-control-allow-origin')).toBe('*');

      const ok = await fetch(`${p.origin}/v1/embeddings`, {
        method: 'POST',
        headers: {
          origin: 'https://app.example',
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'm', input: 'x' }),
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe('*');
      expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    });
  });

  it('a list of origins: only those are allowed, and the answer varies by Origin', async () => {
    await withProxy({ TOOLPROOF_CORS_ORIGINS: 'https://a.example,https://b.example' }, async (p) => {
      const { path, ...good } = preflight('https://b.example');
      const res = await fetch(`${p.origin}${path}`, good);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://b.example');
      expect(res.headers.get('vary')).toMatch(/origin/i);
      const { path: path2, ...bad } = preflight('https://evil.example');
      const no = await fetch(`${p.origin}${path2}`, bad);
      expect(no.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  it('off: no CORS headers, and a preflight is no longer answered without a key', async () => {
    await withProxy({ TOOLPROOF_CORS_ORIGINS: 'off' }, async (p) => {
      const { path, ...init } = preflight('https://app.example');
      const res = await fetch(`${p.origin}${path}`, init);
      expect(res.status).toBe(401);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  it('a streamed (hijacked) chat response carries the header too', async () => {
    const stack = await startStack();
    try {
      const res = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: { origin: 'https://app.example', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(await res.text()).toContain('[DONE]');
    } finally {
      await stack.close();
    }
  });
});
