/**
 * toolproof_argument_validation_failures_total{tool} kept the first 200 failing names until
 * restart: after 200 junk tool names, a real tool's failures counted as tool="other". A name
 * keeps its own label now only once a call of it reached a client and passed the checks, so
 * names that only ever fail take no slot (server/tool-labels.ts).
 */
import { describe, expect, it } from 'vitest';
import { answerWithCall, proxyInFrontOf } from '../support/harness.js';

/** The call the fake model makes next: a name and its arguments. */
let next = { name: 'get_weather', args: '{"city":"Paris"}' };
const pair = proxyInFrontOf(
  (req, res) =>
    answerWithCall(req, res, {
      id: 'call_1',
      type: 'function',
      function: { name: next.name, arguments: next.args },
    }),
  { file: (url) => ({ upstream: { url }, defaults: { maxRetries: 0 } }) as never },
);

const tool = (name: string) => ({
  type: 'function',
  function: {
    name,
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
});

async function call(name: string, args: string): Promise<void> {
  next = { name, args };
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], tools: [tool(name)] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

async function failures(): Promise<Map<string, number>> {
  const text = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(
    /^toolproof_argument_validation_failures_total\{[^}]*tool="([^"]*)"[^}]*\} (\d+)$/gm,
  ))
    out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
  return out;
}

describe('the tool label of argument validation failures', () => {
  it('junk names that only fail cannot push a real tool into "other"', async () => {
    for (let i = 0; i < 210; i++) await call(`junk_${i}`, '{}'); // each misses "city"
    await call('get_weather', '{"city":"Paris"}'); // passes: the name is a real tool
    await call('get_weather', '{}');
    const f = await failures();
    expect(f.get('get_weather')).toBe(1);
    expect(f.get('other')).toBe(210);
    expect([...f.keys()].filter((k) => k.startsWith('junk_'))).toEqual([]);
  }, 60_000);
});
