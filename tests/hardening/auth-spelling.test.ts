/**
 * The key check runs on the route the router matched, not on the URL as the client spelled it:
 * a percent-encoded path or an absolute-form request target must not reach the upstream (on the
 * operator's upstream key) without a client key. Deny by default; ops endpoints are explicit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHAT_BODY,
  type FakeUpstream,
  fakeUpstream,
  httpRequest,
  type RunningProxy,
  rawRequest,
  startProxy,
} from '../support/harness.js';

const KEY = 'client-key-123456';
let up: FakeUpstream;
let proxy: RunningProxy;

beforeAll(async () => {
  up = await fakeUpstream();
  proxy = await startProxy({
    TOOLPROOF_UPSTREAM_URL: up.url,
    TOOLPROOF_API_KEYS: KEY,
    TOOLPROOF_UPSTREAM_API_KEY: 'operator-upstream-key',
  });
});
afterAll(async () => {
  await proxy.close();
  await up.close();
});

describe('auth whatever the spelling of the URL', () => {
  const spellings = [
    '/%761/chat/completions',
    '/%76%31/chat/completions',
    'http://x/v1/chat/completions',
    '/v1/./chat/completions',
    '/v1/chat/completions',
    '/%761/completions',
    'http://evil.example/v1/embeddings',
  ];
  for (const target of spellings) {
    it(`POST ${target} without a key -> 401, nothing sent upstream`, async () => {
      const before = up.requests.length;
      const res = await rawRequest(proxy.port, httpRequest('POST', target, CHAT_BODY));
      expect(res.status).toBe(401);
      expect(res.body).toContain('"code":"invalid_api_key"');
      expect(up.requests.length).toBe(before);
    });
  }

  it('pass-through routes need the key too, whatever the spelling', async () => {
    for (const target of ['/tokenize', '/%74okenize', 'http://x/tokenize', '/v1/models/m1', '/v1/rerank']) {
      const before = up.requests.length;
      const res = await rawRequest(proxy.port, httpRequest('POST', target, '{"model":"m1","prompt":"a"}'));
      expect(res.status, target).toBe(401);
      expect(up.requests.length).toBe(before);
    }
  });

  it('with the key, the same spellings reach the upstream with the upstream key, never the client key', async () => {
    const before = up.requests.length;
    const res = await rawRequest(
      proxy.port,
      httpRequest('POST', '/%761/tokenize', '{"model":"m1","prompt":"a"}', {
        authorization: `Bearer ${KEY}`,
      }),
    );
    expect(res.status).toBe(200);
    const got = up.requests.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]!.url).toBe('/v1/tokenize');
    expect(got[0]!.headers.authorization).toBe('Bearer operator-upstream-key');
  });

  it('open without a key: /health, /ready, /metrics, /docs (by default)', async () => {
    for (const path of ['/health', '/ready', '/metrics', '/docs/json']) {
      const res = await fetch(`${proxy.origin}${path}`);
      expect(res.status, path).toBe(200);
    }
  });
});

describe('TOOLPROOF_PROTECT_OPS', () => {
  it('puts /metrics and /docs behind the key; /health and /ready stay open', async () => {
    const p = await startProxy({
      TOOLPROOF_UPSTREAM_URL: up.url,
      TOOLPROOF_API_KEYS: KEY,
      TOOLPROOF_PROTECT_OPS: 'metrics,docs',
    });
    try {
      for (const path of ['/metrics', '/docs', '/docs/json', '/%6detrics']) {
        const res = await rawRequest(p.port, httpRequest('GET', path));
        expect(res.status, path).toBe(401);
      }
      const withKey = await fetch(`${p.origin}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(withKey.status).toBe(200);
      expect((await fetch(`${p.origin}/health`)).status).toBe(200);
      expect((await fetch(`${p.origin}/ready`)).status).toBe(200);
    } finally {
      await p.close();
    }
  });
});
