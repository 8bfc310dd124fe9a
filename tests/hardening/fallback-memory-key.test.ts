/**
 * The tool_choice fallback is remembered per upstream and model name as sent upstream, not per
 * metrics label. Under the label, every unlisted model of an upstream ("other") shared one
 * memory, so one model's rejection of `required` turned forcing off for the others; and a model
 * whose label changed after its first answer paid the failed round trip again.
 */
import { describe, expect, it } from 'vitest';
import { FallbackMemory } from '../../server/fallback-memory.js';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { model: string; tool_choice?: unknown };
  if (body.model === 'picky-model' && body.tool_choice === 'required') {
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

async function ask(model: string): Promise<Array<{ model: string; tool_choice: unknown }>> {
  const before = pair.upstream.requests.length;
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
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
});
