/**
 * `npm start` with no upstream, as a new user first meets it: the built-in simulator reports
 * cached prompt tokens (vLLM with --enable-prompt-tokens-details), so a conversation's second turn
 * shows its cached share in the usage, the inspector's session view and the metrics. Without it
 * every cached ratio on the demo read "–".
 */
import { afterEach, expect, it } from 'vitest';
import { freePort, type Proc, startToolproof } from '../support/toolproof-process.js';

let proc: Proc | undefined;
afterEach(async () => {
  proc?.child.kill('SIGTERM');
  await proc?.exited;
  proc = undefined;
});

it('the built-in simulator reports cached prompt tokens, and the session view reads a cached ratio', async () => {
  const port = await freePort();
  proc = startToolproof({ TOOLPROOF_PORT: String(port), TOOLPROOF_LOG_LEVEL: 'info' });
  await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening'), 60_000);
  const origin = `http://127.0.0.1:${port}`;
  const ask = async (messages: unknown[]) => {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-conversation-id': 'builtin-sim' },
      body: JSON.stringify({ model: 'demo', messages }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as {
      choices: Array<{ message: { content: string } }>;
      usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } | null };
    };
  };
  const first = [
    { role: 'system', content: `You are a careful assistant. ${'Answer briefly. '.repeat(40)}` },
    { role: 'user', content: 'Say hello.' },
  ];
  const one = await ask(first);
  expect(one.usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
  const two = await ask([
    ...first,
    { role: 'assistant', content: one.choices[0]!.message.content },
    { role: 'user', content: 'And goodbye.' },
  ]);
  expect(two.usage.prompt_tokens_details!.cached_tokens).toBeGreaterThan(two.usage.prompt_tokens / 2);

  const list = (await (await fetch(`${origin}/inspect/api/requests`)).json()) as {
    requests: Array<{ session: string }>;
  };
  const key = encodeURIComponent(list.requests[0]!.session);
  const session = (await (await fetch(`${origin}/inspect/api/session?key=${key}`)).json()) as {
    turns: Array<{ cachedRatio: number | null }>;
  };
  expect(session.turns.map((t) => t.cachedRatio)).toEqual([0, expect.any(Number)]);
  expect(session.turns[1]!.cachedRatio).toBeGreaterThan(0.5);
}, 90_000);

it('a model the upstream lists keeps its own metric label from its first request on', async () => {
  // The list was read only when /ready or /v1/models asked: a fresh process's first request
  // with the served name counted under model="other" for good.
  const port = await freePort();
  proc = startToolproof({ TOOLPROOF_PORT: String(port), TOOLPROOF_LOG_LEVEL: 'info' });
  await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening'), 60_000);
  const origin = `http://127.0.0.1:${port}`;
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'simulated-model', messages: [{ role: 'user', content: 'Say hello.' }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  expect(metrics).toMatch(
    /toolproof_requests_total\{model="simulated-model",route="chat\/completions",status="200"/,
  );
  expect(metrics).not.toMatch(/toolproof_requests_total\{model="other"/);
}, 90_000);
