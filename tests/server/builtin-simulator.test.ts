/**
 * `npm start` with no upstream, as a new user first meets it: the built-in simulator reports
 * cached prompt tokens (vLLM with --enable-prompt-tokens-details), so a conversation's second turn
 * shows its cached share in the usage, the inspector's session view and the metrics. Without it
 * every cached ratio on the demo read "–".
 *
 * One process for both tests (a start is ~1.3 s of CPU): the metric label's case needs a fresh
 * process's first request, so that request is sent, and /metrics read, as soon as the process
 * listens, before any test; its test asserts what was read then, whichever test runs first.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, type Proc, startToolproof } from '../support/toolproof-process.js';

let proc: Proc;
let origin: string;
/** The first request's status and /metrics right after it (the fresh process's first request). */
let first: { status: number; metrics: string };

beforeAll(async () => {
  const port = await freePort();
  proc = startToolproof({ TOOLPROOF_PORT: String(port), TOOLPROOF_LOG_LEVEL: 'info' });
  await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.startsWith('Server listening'), 60_000);
  origin = `http://127.0.0.1:${port}`;
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'simulated-model', messages: [{ role: 'user', content: 'Say hello.' }] }),
  });
  await res.text();
  first = { status: res.status, metrics: await (await fetch(`${origin}/metrics`)).text() };
}, 90_000);

afterAll(async () => {
  proc?.child.kill('SIGTERM');
  await proc?.exited;
});

it('the built-in simulator reports cached prompt tokens, and the session view reads a cached ratio', async () => {
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

  // the newest first: this conversation's second turn
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

it('a model the upstream lists keeps its own metric label from its first request on', () => {
  // The list was read only when /ready or /v1/models asked: a fresh process's first request
  // with the served name counted under model="other" for good. That request is beforeAll's.
  expect(first.status).toBe(200);
  expect(first.metrics).toMatch(
    /toolproof_requests_total\{model="simulated-model",route="chat\/completions",status="200"/,
  );
  expect(first.metrics).not.toMatch(/toolproof_requests_total\{model="other"/);
});
