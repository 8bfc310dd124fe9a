/**
 * /v1/completions and /v1/embeddings count their upstream's failures in
 * toolproof_upstream_errors_total as a chat attempt's are (status_4xx, status_5xx, unreachable):
 * they were relayed to the client and counted nowhere, so the dashboard's upstream error panel and
 * ToolproofUpstreamErrors missed a backend failing only these routes.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

let up: FakeUpstream;
let proxy: RunningProxy;
let dead: RunningProxy;

beforeAll(async () => {
  up = await fakeUpstream((req, res) => {
    const status = req.url.endsWith('/completions') ? 500 : 400;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `failing ${req.url}`, type: 'BadRequestError' } }));
  });
  proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: up.url });
  // Nothing listens there.
  dead = await startProxy({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });
});
afterAll(async () => {
  await proxy.close();
  await dead.close();
  await up.close();
});

const count = (metrics: string, kind: string, upstream: string) =>
  Number(
    new RegExp(
      `^toolproof_upstream_errors_total\\{model="m1",upstream="${upstream.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}",kind="${kind}"\\} (\\d+)$`,
      'm',
    ).exec(metrics)?.[1] ?? 0,
  );

describe('relayed routes count their upstream errors', () => {
  it('a 5xx and a 4xx', async () => {
    const client = new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'unused', maxRetries: 0 });
    await expect(client.completions.create({ model: 'm1', prompt: 'hi' })).rejects.toMatchObject({
      status: 500,
    });
    await expect(client.embeddings.create({ model: 'm1', input: 'hi' })).rejects.toMatchObject({
      status: 400,
    });
    const metrics = await (await fetch(`${proxy.origin}/metrics`)).text();
    expect(count(metrics, 'status_5xx', up.url)).toBe(1);
    expect(count(metrics, 'status_4xx', up.url)).toBe(1);
  });

  it('an unreachable upstream', async () => {
    const client = new OpenAI({ baseURL: `${dead.origin}/v1`, apiKey: 'unused', maxRetries: 0 });
    await expect(client.embeddings.create({ model: 'm1', input: 'hi' })).rejects.toMatchObject({
      status: 502,
    });
    const metrics = await (await fetch(`${dead.origin}/metrics`)).text();
    expect(count(metrics, 'unreachable', 'http://127.0.0.1:9/v1')).toBe(1);
  });
});
