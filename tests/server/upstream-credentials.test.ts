/**
 * Upstream credentials in the configuration: userinfo in an upstream URL is refused at start-up
 * (it would be printed wherever the upstream is named, and never sent), without echoing the
 * password; and a key belongs to the upstream it was configured for (on the wire:
 * tests/hardening/upstream-credentials.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { UpstreamClient } from '../../server/upstream.js';

describe('credentials in upstream URLs', () => {
  for (const env of [
    { TOOLPROOF_UPSTREAM_URL: 'http://user:s3cret-pw@gpu:8000/v1' },
    { TOOLPROOF_UPSTREAM_URL: 'http://a:8000/v1,http://user:s3cret-pw@gpu:8000/v1' },
    { TOOLPROOF_UPSTREAM_URL: 'http://:s3cret-pw@gpu:8000/v1' },
  ]) {
    it(`refused at start-up, password never echoed: ${env.TOOLPROOF_UPSTREAM_URL.replace('s3cret-pw', '…')}`, () => {
      let err: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('credentials');
      expect((err as Error).message).toContain('TOOLPROOF_UPSTREAM_API_KEY');
      expect((err as Error).message).not.toContain('s3cret-pw');
    });
  }

  it('in a YAML model: refused naming the model key, password never echoed', () => {
    expect(() => loadConfig({}, { models: { m: { upstream: 'https://bob:s3cret-pw@h/v1' } } })).toThrow(
      /models\.m\.upstream: "https:\/\/\*\*\*@h\/v1" must not contain credentials.*models\.m\.apiKey/,
    );
  });

  it('an unparsable URL with credentials is not echoed either', () => {
    let message = '';
    try {
      loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://u:s3cret-pw@[bad/v1' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('is not a URL');
    expect(message).not.toContain('s3cret-pw');
  });

  it('the upstream label never carries userinfo', async () => {
    const client = new UpstreamClient(
      { urls: ['http://u:p@h:1/v1', 'http://h2:2/v1/'] },
      { connectMs: 1_000, firstByteMs: 1_000, idleMs: 1_000 },
    );
    expect(client.label).toBe('http://h:1/v1,http://h2:2/v1');
    await client.close();
  });
});

describe('a key belongs to its upstream', () => {
  const A = 'http://127.0.0.1:8001/v1';
  const B = 'http://127.0.0.1:8002/v1';

  it('config: a YAML model on another host does not inherit the default upstream key', () => {
    const c = loadConfig(
      { TOOLPROOF_UPSTREAM_URL: A, TOOLPROOF_UPSTREAM_API_KEY: 'key-for-a' },
      {
        models: {
          other: { upstream: B },
          own: { upstream: B, apiKey: 'key-for-b' },
          same: { upstream: A },
        },
      },
    );
    expect(c.models.other!.upstream.apiKey).toBeUndefined();
    expect(c.models.own!.upstream.apiKey).toBe('key-for-b');
    expect(c.models.same!.upstream.apiKey).toBe('key-for-a');
  });
});
