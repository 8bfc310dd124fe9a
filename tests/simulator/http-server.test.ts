import { request } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { chat, scenarioHeader, WEATHER_TOOL } from './helpers.js';

const user = [{ role: 'user', content: 'hello' }];
const LONG = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Opens a raw streaming request, reads `events` SSE events, then destroys the socket. */
function readThenDisconnect(sim: Simulator, scenario: unknown, events: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${sim.url}/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', ...scenarioHeader(scenario) },
    });
    let seen = '';
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        seen += d;
        if (seen.split('\n\n').length - 1 >= events) {
          req.destroy();
          resolve(seen);
        }
      });
    });
    req.on('error', (err) => {
      if (!seen) reject(err);
    });
    req.end(JSON.stringify({ model: 'm', messages: user, stream: true }));
  });
}

let sim: Simulator;
beforeAll(async () => {
  sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

describe('request recording', () => {
  it('records method, path, headers and the parsed body of every request', async () => {
    await chat(sim, { messages: user, tools: [WEATHER_TOOL], tool_choice: 'required' }, { 'x-trace': 'abc' });
    await fetch(`${sim.url}/models`);
    expect(sim.requests).toHaveLength(2);
    const [first, second] = sim.requests;
    expect(first).toMatchObject({ index: 0, method: 'POST', path: '/v1/chat/completions' });
    expect(first?.headers['x-trace']).toBe('abc');
    expect(first?.body).toMatchObject({ tool_choice: 'required', tools: [WEATHER_TOOL] });
    expect(second).toMatchObject({ method: 'GET', path: '/v1/models', body: undefined });
  });

  it('keeps the raw body when it is not JSON', async () => {
    await fetch(`${sim.url}/chat/completions`, { method: 'POST', body: '{oops' });
    expect(sim.requests[0]).toMatchObject({ rawBody: '{oops', body: undefined });
  });

  it('setScenario() changes the default scenario; a header still wins', async () => {
    const s = await createSimulator({ personality: 'llama-server', scenario: 'prose' });
    try {
      s.setScenario([{ say: 'from setScenario' }]);
      const a = await chat(s, { messages: user });
      expect((a.json.choices as Array<{ message: { content: string } }>)[0]?.message.content).toBe(
        'from setScenario',
      );
      const b = await chat(s, { messages: user }, scenarioHeader({ say: 'from header' }));
      expect((b.json.choices as Array<{ message: { content: string } }>)[0]?.message.content).toBe(
        'from header',
      );
      expect(() => s.setScenario('nope')).toThrow(/unknown scenario/);
    } finally {
      await s.close();
    }
  });

  it('reset() clears requests and aborts', async () => {
    await fetch(`${sim.url}/models`);
    sim.reset();
    expect(sim.requests).toEqual([]);
    expect(sim.aborts).toEqual([]);
  });
});

describe('aborts and failure behaviours', () => {
  it('records a client disconnect mid-stream', async () => {
    await readThenDisconnect(sim, { say: LONG, chunkDelayMs: 15 }, 3);
    await until(() => sim.aborts.length === 1);
    expect(sim.aborts[0]).toMatchObject({ requestIndex: 0, path: '/v1/chat/completions', midStream: true });
    expect(sim.aborts[0]?.chunksSent).toBeGreaterThanOrEqual(3);
    expect(sim.aborts[0]?.chunksSent).toBeLessThan(40);
  });

  it('records a disconnect before the first byte as not mid-stream', async () => {
    const controller = new AbortController();
    const pending = chat(sim, { messages: user }, { ...scenarioHeader({ say: 'late', delayMs: 400 }) });
    void pending.catch(() => {});
    const aborted = fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json', ...scenarioHeader({ say: 'late', delayMs: 400 }) },
      body: JSON.stringify({ model: 'm', messages: user }),
    }).catch((e: unknown) => e);
    await until(() => sim.requests.length === 2 && sim.requests[1]?.rawBody !== '');
    controller.abort();
    await aborted;
    await until(() => sim.aborts.length === 1);
    expect(sim.aborts[0]).toMatchObject({ requestIndex: 1, midStream: false, chunksSent: 0 });
    await pending;
  });

  it('stallAfterChunks keeps the socket open after N events; the client gives up and the abort is recorded', async () => {
    const seen = await readThenDisconnect(sim, { say: LONG, stallAfterChunks: 2 }, 2);
    expect(seen.split('\n\n').filter(Boolean)).toHaveLength(2);
    await until(() => sim.aborts.length === 1);
    expect(sim.aborts[0]).toMatchObject({ midStream: true, chunksSent: 2 });
  });

  it('a stalled stream sends nothing more', async () => {
    const res = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...scenarioHeader({ say: LONG, stallAfterChunks: 1 }) },
      body: JSON.stringify({ model: 'm', messages: user, stream: true }),
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: /);
    const next = await Promise.race([reader.read(), new Promise((r) => setTimeout(() => r('timeout'), 150))]);
    expect(next).toBe('timeout');
    await reader.cancel();
  });

  it('dieAfterChunks destroys the socket mid-stream; the client sees a truncated body', async () => {
    const res = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...scenarioHeader({ say: LONG, dieAfterChunks: 3 }) },
      body: JSON.stringify({ model: 'm', messages: user, stream: true }),
    });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('dieAfterChunks on a non-stream request drops the connection without a response', async () => {
    await expect(
      chat(sim, { messages: user }, scenarioHeader({ say: 'x', dieAfterChunks: 0 })),
    ).rejects.toThrow();
  });

  it('delayMs delays the first byte; chunkDelayMs spaces the events', async () => {
    const t0 = Date.now();
    await chat(sim, { messages: user }, scenarioHeader({ say: 'x', delayMs: 120 }));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(110);
    const t1 = Date.now();
    await chat(sim, { messages: user, stream: true }, scenarioHeader({ say: 'a b c d', chunkDelayMs: 30 }));
    expect(Date.now() - t1).toBeGreaterThanOrEqual(5 * 30 - 10);
  });

  it('scripted errors use the personality error shape', async () => {
    const r = await chat(
      sim,
      { messages: user },
      scenarioHeader({ error: { status: 503, message: 'overloaded' } }),
    );
    expect(r.status).toBe(503);
    expect(r.json).toEqual({
      error: { message: 'overloaded', type: 'InternalServerError', param: null, code: 503 },
    });
  });

  it('answers a bad x-sim-scenario with a 400 that names the problem, and accepts b64: values', async () => {
    const bad = await chat(sim, { messages: user }, { 'x-sim-scenario': 'nope' });
    expect(bad.status).toBe(400);
    expect((bad.json.error as { message: string }).message).toContain('unknown scenario "nope"');
    const b64 = Buffer.from(JSON.stringify({ say: 'héllo ✓' })).toString('base64');
    const ok = await chat(sim, { messages: user }, { 'x-sim-scenario': `b64:${b64}` });
    expect((ok.json.choices as Array<{ message: { content: string } }>)[0]?.message.content).toBe('héllo ✓');
  });
});

describe('the openai SDK reads both personalities', () => {
  for (const personality of ['vllm', 'llama-server'] as const) {
    it(`${personality}: non-stream and stream tool calls`, async () => {
      const s = await createSimulator({ personality, scenario: 'tools' });
      try {
        const client = new OpenAI({ baseURL: s.url, apiKey: 'x', maxRetries: 0 });
        const body = {
          model: 'simulated-model',
          messages: [{ role: 'user' as const, content: 'weather?' }],
          tools: [WEATHER_TOOL as OpenAI.Chat.ChatCompletionTool],
        };
        const done = await client.chat.completions.create(body);
        const tc = done.choices[0]?.message.tool_calls?.[0];
        expect(tc?.type === 'function' && tc.function.name).toBe('get_weather');
        const stream = await client.chat.completions.create({ ...body, stream: true });
        let args = '';
        for await (const chunk of stream) {
          for (const d of chunk.choices[0]?.delta.tool_calls ?? []) args += d.function?.arguments ?? '';
        }
        expect(JSON.parse(args)).toEqual({ location: 'Paris', unit: 'celsius' });
      } finally {
        await s.close();
      }
    });
  }
});
