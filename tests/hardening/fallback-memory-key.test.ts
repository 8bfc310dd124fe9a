/**
 * The tool_choice fallback is remembered per upstream and model name as sent upstream, not per
 * metrics label. Under the label, every unlisted model of an upstream ("other") shared one
 * memory, so one model's rejection of `required` turned forcing off for the others; and a model
 * whose label changed after its first answer paid the failed round trip again.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { FallbackMemory, memoryModel } from '../../server/fallback-memory.js';
import { closeApp } from '../server/stack.js';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { model: string; tool_choice?: unknown };
  if (body.model.startsWith('picky') && body.tool_choice === 'required') {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        error: { message: '"required" tool_choice is not supported', type: 'BadRequestError' },
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(textCompletion('ok'));
});

const tool = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

async function ask(
  model: string,
  origin = pair.proxy.origin,
  key?: string,
): Promise<Array<{ model: string; tool_choice: unknown }>> {
  const before = pair.upstream.requests.length;
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], tools: [tool] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
  return pair.upstream.requests
    .slice(before)
    .map((r) => JSON.parse(r.body.toString()) as { model: string; tool_choice: unknown });
}

describe('the tool_choice fallback memory', () => {
  it('is per model as sent upstream: another unlisted model stays forced, the same one skips the failed trip', async () => {
    // Two models the YAML does not list, on one upstream: both labelled "other" at first.
    expect((await ask('picky-model')).map((r) => r.tool_choice)).toEqual(['required', 'auto']);
    expect((await ask('easy-model')).map((r) => r.tool_choice)).toEqual(['required']);
    // picky-model answered once, so its label is its name now: the memory still finds it.
    expect((await ask('picky-model')).map((r) => r.tool_choice)).toEqual(['auto']);
    expect((await ask('easy-model')).map((r) => r.tool_choice)).toEqual(['required']);
    const metrics = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_tool_choice_fallback_active\{[^}]*\} 1/);
  });

  it('holds a bounded number of models, the oldest going first', () => {
    const memory = new FallbackMemory(() => 0, 3);
    for (const m of ['a', 'b', 'c', 'd']) memory.remember('u', m, 60);
    expect(['a', 'b', 'c', 'd'].map((m) => memory.isActive('u', m))).toEqual([false, true, true, true]);
    memory.remember('u', 'e', 60, 'other');
    expect(memory.active()).toEqual([
      ['u', 'c'],
      ['u', 'd'],
      ['u', 'other'],
    ]);
  });

  it("one key's many refusals do not push another key's out of a full memory", async () => {
    // The real server, its memory held to 8 entries (4096 in production) and two keys.
    const app = await buildApp(
      loadConfig(
        { TOOLPROOF_UPSTREAM_URL: pair.upstream.url },
        {
          keys: [
            { name: 'a', key: 'sk-memory-a-00000001' },
            { name: 'b', key: 'sk-memory-b-00000002' },
          ],
        },
      ),
      { logger: false, memory: new FallbackMemory(Date.now, 8) },
    );
    await app.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    closers.push(() => closeApp(app));
    const b = (m: string) => ask(m, origin, 'sk-memory-b-00000002');
    expect((await b('picky-b')).map((r) => r.tool_choice)).toEqual(['required', 'auto']);
    // Key A: a refusal under ten names of its own, more than the memory holds.
    for (let i = 0; i < 10; i++) await ask(`picky-a${i}`, origin, 'sk-memory-a-00000001');
    // B's model still goes straight to "auto" (before: its entry, the oldest, was pushed out by
    // A's, and B paid the refused round trip again: ['required', 'auto']).
    expect((await b('picky-b')).map((r) => r.tool_choice)).toEqual(['auto']);
  });

  it('a full memory gives up the oldest entry of the key holding the most', () => {
    const memory = new FallbackMemory(() => 0, 4);
    memory.remember('u', memoryModel('b1', 'b'), 60);
    for (const m of ['a1', 'a2', 'a3', 'a4']) memory.remember('u', memoryModel(m, 'a'), 60);
    expect(memory.isActive('u', memoryModel('b1', 'b'))).toBe(true);
    expect(memory.isActive('u', memoryModel('a1', 'a'))).toBe(false);
    // a name that carries another key's mark is still its own key's
    memory.remember('u', memoryModel(`x${'\u0000key\u0000'}b`, 'a'), 60);
    expect(memory.isActive('u', memoryModel('b1', 'b'))).toBe(true);
  });
});

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close();
});
