/**
 * n > 1 on llama-server (choices asked one request each, policies/single-choice) against a client
 * that hangs up: the choices still owed must not be asked (the model would generate, for nobody,
 * up to 127 more answers of max_tokens each); with a model that never writes a valid call, each
 * choice is asked at most 1 + maxRetries times; an `n` out of range asks nothing. These held; each
 * fails with the upstream request not tied to the client's abort (a non-streamed n = 128 asked 15
 * choices in 400 ms after the client left). Real server, simulated llama-server, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ sim: { personality: 'llama-server' } });
  // The refusal of n learnt once (the first request: 400 then one request a choice).
  stack.sim.setScenario(() => ({ say: 'ok' }));
  await stack.client.chat.completions.create({ model: 'sim', n: 2, messages });
});
afterAll(() => stack.close());

const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

function chatRequests(): number {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
}

const settle = () => new Promise((r) => setTimeout(r, 300));

describe('n = 128 on llama-server, the client hangs up mid-choice', () => {
  it('streamed: no choice is asked after the client left', async () => {
    stack.sim.setScenario(() => ({ say: 'Sunny and warm in Paris today.', chunkDelayMs: 8 }));
    const before = chatRequests();
    const ac = new AbortController();
    const stream = await stack.client.chat.completions.create(
      { model: 'sim', n: 128, messages, stream: true },
      { signal: ac.signal },
    );
    await (async () => {
      for await (const chunk of stream) if (chunk.choices.some((c) => c.index === 2)) ac.abort();
    })().catch(() => undefined);
    await settle();
    const asked = chatRequests() - before;
    // choices 0, 1 and 2 (the one cut); an upstream request never aborted asked a 4th (and a
    // non-streamed answer 15 in 400 ms instead of 4)
    expect(asked).toBe(3);
  });

  it('non-streamed: no choice is asked after the client left', async () => {
    stack.sim.setScenario(() => ({ say: 'Sunny.', delayMs: 60 }));
    const before = chatRequests();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    await stack.client.chat.completions
      .create({ model: 'sim', n: 128, messages, tools: [weatherTool] }, { signal: ac.signal })
      .catch(() => undefined);
    await settle();
    const asked = chatRequests() - before;
    expect(asked).toBeLessThanOrEqual(5);
  });
});

describe('n on llama-server with a model that always writes invalid calls', () => {
  it('asks each choice at most 1 + maxRetries times: n x (1 + maxRetries) requests in all', async () => {
    stack.sim.setScenario(() => ({ call: [{ name: 'get_weather', arguments: { days: 2 } }] })); // no city
    const before = chatRequests();
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      n: 4,
      messages,
      tools: [weatherTool],
    });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(chatRequests() - before).toBe(4 * (1 + DEFAULT_MODEL_SETTINGS.maxRetries));
  });
});

describe('n out of its range', () => {
  it('0, negative, fractional, past 128, a string: the client’s 400, nothing asked upstream', async () => {
    const before = chatRequests();
    const statuses: number[] = [];
    for (const n of [0, -1, 1.5, 129, 1e9, '2', '1e9']) {
      const res = await fetch(`${stack.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim', n, messages }),
      });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 400, 400, 400]);
    expect(chatRequests() - before).toBe(0);
  });
});
