/**
 * The concurrency cap's 429 said `Retry-After: 1` whatever the key's requests held their slot
 * for: a client that obeyed it (the openai and Anthropic SDKs, agents) came straight back into
 * the same 429, again and again, for as long as the slot stayed held. It now says how long the
 * key's requests held a slot lately (server/keys.ts concurrencyRetryAfter), in the header and in
 * the message, on every door and streamed or not (a refusal before any byte: the HTTP 429).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { type Config, loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { closeApp, waitFor } from '../server/stack.js';

const KEY = 'sk-held-000000000001';
/** How long each of the key's requests holds its slot (the simulator's delay). */
const HOLD_MS = 2500;
let sim: Simulator;
let app: ToolproofApp;
let origin: string;

beforeAll(async () => {
  sim = await createSimulator({ personality: 'vllm', scenario: 'echo' });
  const base = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url },
    {
      defaults: { forceToolUse: false },
      models: { m: { upstream: sim.url } },
      // queueTimeoutMs 0: over the cap it is refused at once.
      keys: [{ name: 'held', key: KEY, concurrency: 1, queueTimeoutMs: 0 }],
    },
  );
  const config: Config = Object.freeze({ ...base, simulator: true });
  app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeApp(app);
  await sim.close();
});

type Door = 'chat' | 'responses' | 'messages';
function send(door: Door, text: string, stream = false, slow = false): Promise<Response> {
  const path =
    door === 'chat' ? '/v1/chat/completions' : door === 'responses' ? '/v1/responses' : '/v1/messages';
  const body =
    door === 'chat'
      ? { model: 'm', stream, messages: [{ role: 'user', content: text }] }
      : door === 'responses'
        ? { model: 'm', stream, input: text }
        : { model: 'm', stream, max_tokens: 50, messages: [{ role: 'user', content: text }] };
  return fetch(`${origin}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(door === 'messages'
        ? { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }
        : { authorization: `Bearer ${KEY}` }),
      ...(slow ? { 'x-sim-scenario': JSON.stringify({ say: 'slowly', delayMs: HOLD_MS }) } : {}),
    },
    body: JSON.stringify(body),
  });
}

describe('a key at its concurrency cap whose requests hold their slot for seconds', () => {
  it('its 429 says the seconds a slot is held lately, on every door, streamed or not', async () => {
    // Before any request of the key ended there is nothing to go by: 1 s, as before.
    const first = send('chat', 'first', false, true);
    await waitFor(() => sim.requests.some((r) => r.rawBody.includes('first')));
    const early = await send('chat', 'early');
    expect(early.status).toBe(429);
    expect(early.headers.get('retry-after')).toBe('1');
    await early.arrayBuffer();
    expect((await first).status).toBe(200);

    // One request held its slot ~2.5 s: the next refusals say so.
    const second = send('chat', 'second', false, true);
    await waitFor(() => sim.requests.some((r) => r.rawBody.includes('second')));
    for (const door of ['chat', 'responses', 'messages'] as const)
      for (const stream of [false, true]) {
        const res = await send(door, `over-${door}-${stream}`, stream);
        expect(res.status).toBe(429);
        const seconds = Number(res.headers.get('retry-after'));
        // ceil(2.5 s) on an idle box; more when the box is slow, never past the 60 s bound.
        expect(seconds).toBeGreaterThanOrEqual(Math.ceil(HOLD_MS / 1000));
        expect(seconds).toBeLessThanOrEqual(60);
        const body = (await res.json()) as Record<string, { type: string; message: string }>;
        expect(body.error!.message).toContain(`Please try again in ${seconds}s.`);
        if (door === 'messages')
          expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
        else expect(body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
      }
    expect((await second).status).toBe(200);
    expect(sim.requests.some((r) => r.rawBody.includes('over-'))).toBe(false);
  });
});
