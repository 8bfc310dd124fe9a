/**
 * Upstream credentials on the wire: a key belongs to the upstream it was configured for (the
 * configuration's side, and userinfo in an upstream URL: tests/server/upstream-credentials.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, startProxy } from '../support/harness.js';

describe('a key belongs to its upstream', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  beforeAll(async () => {
    a = await fakeUpstream();
    b = await fakeUpstream();
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('on the wire: the default key never reaches another YAML upstream', async () => {
    const proxy = await startProxy(
      { TOOLPROOF_UPSTREAM_URL: a.url, TOOLPROOF_UPSTREAM_API_KEY: 'key-for-a' },
      { models: { other: { upstream: b.url } } },
    );
    try {
      await fetch(`${proxy.origin}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'other', input: 'x' }),
      });
      await fetch(`${proxy.origin}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm1', input: 'x' }),
      });
      expect(b.requests).toHaveLength(1);
      expect(b.requests[0]!.headers.authorization).toBeUndefined();
      expect(a.requests.at(-1)!.headers.authorization).toBe('Bearer key-for-a');
    } finally {
      await proxy.close();
    }
  });
});
