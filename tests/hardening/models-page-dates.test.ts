/**
 * GET /v1/models in Anthropic's page shape writes each model's `created` as a date. An upstream's
 * `created` past what a Date holds (1e20, or 1e400 read as Infinity) threw in toISOString: a 500
 * for every Anthropic client listing models. Such a date is toolproof's own listing time now.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const pair = proxyInFrontOf((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  if (req.url.endsWith('/models')) {
    res.end(
      '{"object":"list","data":[{"id":"huge","object":"model","created":1e20},' +
        '{"id":"inf","object":"model","created":1e400},{"id":"neg","object":"model","created":-9e15},' +
        '{"id":"text","object":"model","created":"yesterday"},{"id":"fine","object":"model","created":1700000000}]}',
    );
    return;
  }
  res.end('{}');
});

describe("GET /v1/models in Anthropic's shape with out-of-range dates", () => {
  it('answers 200 with a valid created_at for every model', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/models`, {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: Array<{ id: string; created_at: string }> };
    const dates = Object.fromEntries(body.data.map((m) => [m.id, m.created_at]));
    expect(dates.fine).toBe('2023-11-14T22:13:20.000Z');
    for (const id of ['huge', 'inf', 'neg', 'text']) {
      expect(Math.abs(Date.parse(dates[id]!) - Date.now()), id).toBeLessThan(60_000);
    }
  });

  it('the OpenAI page relays them as they are', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/models`);
    expect(res.status).toBe(200);
  });
});
