/**
 * GET /v1/models and models.retrieve do not count against a key's limits, so each must not be a
 * request to every upstream: one list request is in flight per upstream whoever asks, a list read
 * in the last two seconds is reused, and a failed one is asked for again.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

let up: FakeUpstream;
let proxy: RunningProxy;
let openai: OpenAI;
let failNext = false;

const listCalls = () => up.requests.filter((r) => r.method === 'GET' && r.url === '/v1/models').length;

beforeAll(async () => {
  up = await fakeUpstream((req, res) => {
    if (req.url === '/v1/models') {
      if (failNext) {
        failNext = false;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"down"}');
        return;
      }
      // Answered late, so concurrent askers overlap.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'served-7b', object: 'model' }] }));
      }, 50);
      return;
    }
    res.writeHead(404);
    res.end();
  });
  proxy = await startProxy({}, { models: { real: { upstream: up.url } } });
  openai = new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await proxy.close();
  await up.close();
});

describe('the upstream model list behind GET /v1/models', () => {
  it('is one upstream request for many clients at once and soon after', async () => {
    const before = listCalls();
    const lists = await Promise.all(Array.from({ length: 20 }, () => openai.models.list()));
    for (const page of lists) expect(page.data.map((m) => m.id)).toEqual(['real', 'served-7b']);
    const one = await openai.models.retrieve('served-7b');
    expect(one.id).toBe('served-7b');
    expect(listCalls() - before).toBe(1);
  });

  it('is read again once it is two seconds old, and after a failure', async () => {
    // Two seconds pass on the clock the list's age is read from (performance.now), not on the
    // wall: the test slept them until testwait.
    const now = performance.now.bind(performance);
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now() + 2_100);
    try {
      failNext = true;
      const before = listCalls();
      // The upstream fails: the configured name is still listed, the served one is not.
      expect((await openai.models.list()).data.map((m) => m.id)).toEqual(['real']);
      // The failure is not kept: the next request asks again and sees the served model.
      expect((await openai.models.list()).data.map((m) => m.id)).toEqual(['real', 'served-7b']);
      expect(listCalls() - before).toBe(2);
    } finally {
      clock.mockRestore();
    }
  });
});
