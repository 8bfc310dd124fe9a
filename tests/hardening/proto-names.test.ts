/**
 * Client strings that name Object.prototype members ("constructor", "__proto__", "toString")
 * must be looked up as plain names: a 404 naming the model (or the default upstream), never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

const NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

async function post(origin: string, path: string, model: string): Promise<Response> {
  const body =
    path === '/v1/chat/completions'
      ? { model, messages: [{ role: 'user', content: 'hi' }] }
      : { model, input: 'x', prompt: 'x' };
  return fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('model names that are Object.prototype members', () => {
  let up: FakeUpstream;
  let yamlOnly: RunningProxy;
  let withDefault: RunningProxy;
  beforeAll(async () => {
    up = await fakeUpstream();
    yamlOnly = await startProxy({}, { models: { real: { upstream: up.url } } });
    withDefault = await startProxy({ TOOLPROOF_UPSTREAM_URL: up.url });
  });
  afterAll(async () => {
    await yamlOnly.close();
    await withDefault.close();
    await up.close();
  });

  for (const name of NAMES) {
    it(`"${name}" without a default upstream: 404 naming the model on every route`, async () => {
      for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/tokenize']) {
        const res = await post(yamlOnly.origin, path, name);
        expect(res.status, `${path} ${name}`).toBe(404);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('model_not_found');
        expect(body.error.message).toContain(`"${name}"`);
      }
    });

    it(`"${name}" with a default upstream: relayed there like any unmapped name`, async () => {
      const before = up.requests.length;
      const res = await post(withDefault.origin, '/v1/embeddings', name);
      expect(res.status).toBe(200);
      expect(up.requests.length).toBe(before + 1);
      expect(JSON.parse(up.requests.at(-1)!.body.toString()).model).toBe(name);
    });
  }
});
