/**
 * /v1/messages end to end with the real `@anthropic-ai/sdk` client against the simulator:
 * messages.create and messages.stream, a tool loop, leak recovery and the forced final answer
 * seen through Anthropic's API, streamed/non-streamed parity, errors in Anthropic's shape.
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { shutdownGracefully } from '../../server/shutdown.js';
import { createSimulator } from '../../simulator/index.js';
import { type Stack, type StackOptions, startStack, waitFor } from '../server/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(options: StackOptions = {}): Promise<{ stack: Stack; client: Anthropic }> {
  stack = await startStack(options);
  const client = new Anthropic({
    baseURL: stack.origin,
    apiKey: options.apiKey ?? 'x',
    maxRetries: 0,
    timeout: 15_000,
  });
  return { stack, client };
}

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city'],
  },
};

const chatBodies = (s: Stack) =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map(
      (r) =>
        r.body as {
          tools?: Array<{ function: { name: string } }>;
          tool_choice?: unknown;
          messages: Array<Record<string, unknown>>;
          stream?: boolean;
          stream_options?: unknown;
        },
    );

const scenario = (s: unknown) => ({ headers: { 'x-sim-scenario': JSON.stringify(s) } });

/** A message without its per-request ids, for comparing two answers to the same behaviour. */
function shape(m: Anthropic.Message) {
  return {
    role: m.role,
    model: m.model,
    stop_reason: m.stop_reason,
    stop_sequence: m.stop_sequence,
    content: m.content.map((b) => (b.type === 'tool_use' ? { ...b, id: typeof b.id } : b)),
  };
}

describe('forced final answer through /v1/messages', () => {
  it('create: the model answers in prose through final_answer; the client gets a text block', async () => {
    const { stack, client } = await start({ sim: { scenario: 'prose' } });
    const msg = await client.messages.create(
      {
        model: 'sim',
        max_tokens: 512,
        messages: [{ role: 'user', content: 'What is 2+2?' }],
        tools: [weather],
      },
      { headers: { 'x-request-id': 'trace-7' } },
    );
    expect(msg._request_id).toBe('trace-7');
    const sent = chatBodies(stack)[0]!;
    expect(sent.tool_choice).toBe('required');
    expect(sent.tools!.map((t) => t.function.name)).toEqual(['get_weather', 'final_answer']);
    expect(msg.type).toBe('message');
    // The message id is toolproof's request id: what the client reports is in the log line.
    expect(msg.id).toBe('msg_trace-7');
    expect(msg.content).toHaveLength(1);
    expect(msg.content[0]!.type).toBe('text');
    expect((msg.content[0] as Anthropic.TextBlock).text).toMatch(/simulator says yes/);
    expect(msg.stop_reason).toBe('end_turn');
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);
  });

  it('stream: the forced final answer arrives as live text deltas, equal to the non-streamed one', async () => {
    const { stack, client } = await start({ sim: { scenario: 'prose' } });
    const params = {
      model: 'sim',
      max_tokens: 512,
      messages: [{ role: 'user' as const, content: 'Explain "quotes" \\ and émoji 🎉' }],
      tools: [weather],
    };
    const plain = await client.messages.create(params);
    const stream = client.messages.stream(params);
    const events: string[] = [];
    let textDeltas = 0;
    stream.on('streamEvent', (e) => {
      events.push(e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') textDeltas++;
    });
    const final = await stream.finalMessage();
    expect(chatBodies(stack)[1]!.stream_options).toEqual({ include_usage: true });
    expect(shape(final)).toEqual(shape(plain));
    expect(textDeltas).toBeGreaterThan(5);
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(final.usage.input_tokens).toBe(plain.usage.input_tokens);
  });
});

describe('stream framing on the wire', () => {
  it('message_start, ping, one block per run with start/delta/stop, message_delta, message_stop', async () => {
    const { stack } = await start();
    const script = [{ think: 'Hmm.', say: 'Hello there.' }];
    // Claude Code adds ?beta=true to the path.
    const res = await fetch(`${stack.origin}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-scenario': JSON.stringify(script) },
      body: JSON.stringify({
        model: 'sim',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    const events = frames.map((f) => {
      const [ev, data] = f.split('\n');
      const parsed = JSON.parse(data!.slice(6)) as { type: string; index?: number };
      expect(ev).toBe(`event: ${parsed.type}`);
      return parsed;
    });
    const kinds = events.map((e) => (e.index === undefined ? e.type : `${e.type}:${e.index}`));
    const squeezed = kinds.filter((k, i) => k !== kinds[i - 1]);
    expect(squeezed).toEqual([
      'message_start',
      'ping',
      'content_block_start:0',
      'content_block_delta:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1',
      'content_block_stop:1',
      'message_delta',
      'message_stop',
    ]);
    const delta = events.find((e) => e.type === 'message_delta') as unknown as {
      delta: { stop_reason: string };
      usage: { input_tokens: number; output_tokens: number };
    };
    expect(delta.delta.stop_reason).toBe('end_turn');
    expect(delta.usage.output_tokens).toBeGreaterThan(0);
    expect(delta.usage.input_tokens).toBeGreaterThan(0);
  });
});

describe('leak recovery through /v1/messages', () => {
  it('a leaked <tool_call> arrives as a tool_use block, streamed and not', async () => {
    // Forced tool use off: the simulated model really writes the call as text in content.
    const { stack, client } = await start({
      sim: { scenario: 'leak-hermes', personality: 'llama-server' },
      file: { defaults: { forceToolUse: false } },
    });
    const params = {
      model: 'sim',
      max_tokens: 512,
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
      tools: [weather],
    };
    const plain = await client.messages.create(params);
    const streamed = await client.messages.stream(params).finalMessage();
    for (const m of [plain, streamed]) {
      const uses = m.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      expect(uses).toHaveLength(1);
      expect(uses[0]!.name).toBe('get_weather');
      expect(typeof uses[0]!.input).toBe('object');
      expect((uses[0]!.input as { city?: unknown }).city).toEqual(expect.any(String));
      expect(m.stop_reason).toBe('tool_use');
      const text = m.content.filter((b) => b.type === 'text').map((b) => (b as Anthropic.TextBlock).text);
      expect(text.join('')).not.toContain('<tool_call>');
    }
    expect(shape(streamed)).toEqual(shape(plain));
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    const leaks = metrics.split('\n').filter((l) => l.startsWith('toolproof_leaks_total{'));
    expect(leaks.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0)).toBe(2);
  });
});

describe('tool loop: tool_use -> tool_result -> answer', () => {
  const loop = {
    turns: [
      {
        call: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'get_weather', arguments: { city: 'Oslo', days: 2 } },
        ],
      },
      { say: 'Paris is sunny, Oslo is cold.' },
    ],
  };

  const cases = [
    ['create', 'vllm'],
    ['stream', 'vllm'],
    ['create', 'llama-server'],
    ['stream', 'llama-server'],
  ] as const;
  for (const [mode, personality] of cases) {
    it(`${mode} (${personality}): parallel tool_use ids come back as tool_result ids and reach the upstream unchanged`, async () => {
      const { stack, client } = await start({ sim: { strictHistory: true, personality } });
      const run = (messages: Anthropic.MessageParam[]) => {
        const params = { model: 'sim', max_tokens: 512, messages, tools: [weather] };
        return mode === 'create'
          ? client.messages.create(params, scenario(loop))
          : client.messages.stream(params, scenario(loop)).finalMessage();
      };
      const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'Paris and Oslo?' }];
      const first = await run(history);
      expect(first.stop_reason).toBe('tool_use');
      const uses = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      expect(uses.map((u) => u.input)).toEqual([{ city: 'Paris' }, { city: 'Oslo', days: 2 }]);
      expect(new Set(uses.map((u) => u.id)).size).toBe(2);

      history.push({ role: 'assistant', content: first.content });
      history.push({
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: uses[0]!.id, content: 'sunny, 24C' },
          {
            type: 'tool_result',
            tool_use_id: uses[1]!.id,
            content: [{ type: 'text', text: 'service down' }],
            is_error: true,
          },
        ],
      });
      const second = await run(history);
      expect(second.stop_reason).toBe('end_turn');
      expect(second.content.map((b) => (b as Anthropic.TextBlock).text).join('')).toBe(
        'Paris is sunny, Oslo is cold.',
      );

      const upstream = chatBodies(stack).at(-1)!.messages;
      const assistant = upstream.find((m) => m.role === 'assistant') as {
        tool_calls: Array<{ id: string; function: { arguments: string } }>;
      };
      expect(assistant.tool_calls.map((c) => c.id)).toEqual(uses.map((u) => u.id));
      const tools = upstream.filter((m) => m.role === 'tool');
      expect(tools.map((m) => m.tool_call_id)).toEqual(uses.map((u) => u.id));
      expect(tools[0]!.content).toBe('sunny, 24C');
      expect(String(tools[1]!.content)).toMatch(/^\[tool error\] service down$/);
    });
  }
});

describe('request translation reaches the upstream', () => {
  it('system blocks, sampling, stop_sequences, tool_choice any with disable_parallel_tool_use, thinking', async () => {
    const { stack, client } = await start({ sim: { scenario: 'tools' } });
    // Sampling fields are still part of the API; this SDK version's types dropped some of them.
    const sampling = { temperature: 0.2, top_p: 0.9, top_k: 20 } as Record<string, number>;
    await client.messages.create({
      ...sampling,
      model: 'sim',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Use tools.' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Paris?' }] }],
      tools: [weather],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      metadata: { user_id: 'u-1' },
    });
    const sent = chatBodies(stack)[0]! as Record<string, unknown> & {
      messages: Array<Record<string, unknown>>;
    };
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'You are terse.\n\nUse tools.' });
    expect(sent.messages[1]).toEqual({ role: 'user', content: 'Paris?' });
    expect(sent.tool_choice).toBe('required');
    expect(sent.parallel_tool_calls).toBe(false);
    expect(sent.stop).toEqual(['END']);
    expect(sent.max_tokens).toBe(100);
    expect([sent.temperature, sent.top_p, sent.top_k]).toEqual([0.2, 0.9, 20]);
    expect(sent.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(sent.metadata).toBeUndefined();
  });

  it('reasoning comes back as a thinking block first, streamed and not', async () => {
    const { client } = await start();
    const think = [{ think: 'Let me reason.', say: 'Done thinking.' }];
    const params = { model: 'sim', max_tokens: 512, messages: [{ role: 'user' as const, content: 'hi' }] };
    const plain = await client.messages.create(params, scenario(think));
    const streamed = await client.messages.stream(params, scenario(think)).finalMessage();
    for (const m of [plain, streamed]) {
      expect(m.content[0]).toMatchObject({ type: 'thinking', thinking: 'Let me reason.' });
      expect(m.content[1]).toMatchObject({ type: 'text', text: 'Done thinking.' });
    }
  });
});

describe('stop reasons', () => {
  it('a cut answer is max_tokens, streamed and not, with the same text', async () => {
    const { client } = await start({ sim: { scenario: 'prose' } });
    const params = { model: 'sim', max_tokens: 3, messages: [{ role: 'user' as const, content: 'talk' }] };
    const plain = await client.messages.create(params);
    const streamed = await client.messages.stream(params).finalMessage();
    expect(plain.stop_reason).toBe('max_tokens');
    expect(shape(streamed)).toEqual(shape(plain));
    expect(plain.usage.output_tokens).toBeLessThanOrEqual(3);
  });
});

describe('usage', () => {
  // Claude Code takes input_tokens + cache_read_input_tokens (+ cache_creation) as the context
  // used, and compacts on it: the whole prompt in input_tokens counted the cached part twice.
  it('input_tokens and cache_read_input_tokens add up to the prompt, streamed and not', async () => {
    const { stack, client } = await start({ sim: { scenario: 'prose', promptTokensDetails: true } });
    const long = 'All work and no play makes a dull agent. '.repeat(200);
    const params = {
      model: 'sim',
      max_tokens: 64,
      messages: [{ role: 'user' as const, content: long }],
      tools: [weather],
    };
    await client.messages.create(params); // warms the prefix cache
    const plain = await client.messages.create(params);
    const streamed = await client.messages.stream(params).finalMessage();
    const prompts = stack.sim.requests.map((r) => ({ p: r.promptTokens!, c: r.cachedTokens! }));
    expect(prompts[1]!.c).toBeGreaterThan(prompts[1]!.p / 2);
    for (const [msg, up] of [
      [plain, prompts[1]!],
      [streamed, prompts[2]!],
    ] as const) {
      expect(msg.usage.cache_read_input_tokens).toBe(up.c);
      expect(msg.usage.input_tokens).toBe(up.p - up.c);
    }
  });
});

describe('errors in Anthropic shape', () => {
  it('401 without a key, also from the auth hook; x-api-key is accepted', async () => {
    const { stack } = await start({ env: { TOOLPROOF_API_KEYS: 'secret-key-123' } });
    const body = JSON.stringify({
      model: 'sim',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const res = await fetch(`${stack.origin}/v1/messages`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
    const err = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(err.type).toBe('error');
    expect(err.error.type).toBe('authentication_error');
    const bad = new Anthropic({ baseURL: stack.origin, apiKey: 'wrong-key-000', maxRetries: 0 });
    await expect(
      bad.messages.create({ model: 'sim', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const good = new Anthropic({ baseURL: stack.origin, apiKey: 'secret-key-123', maxRetries: 0 });
    const ok = await good.messages.create({
      model: 'sim',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(ok.type).toBe('message');
    // The OpenAI routes keep their own shape.
    const chat = await fetch(`${stack.origin}/v1/chat/completions`, { method: 'POST', body: '{}' });
    expect(((await chat.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  });

  it('400 invalid_request_error for what chat cannot express and for schema violations', async () => {
    const { stack, client } = await start();
    const server = client.messages.create({
      model: 'sim',
      max_tokens: 10,
      messages: [{ role: 'user', content: [{ type: 'document', source: {} } as never] }],
    });
    await expect(server).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(server).rejects.toMatchObject({
      error: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    const res = await fetch(`${stack.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: [] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Missing required field "max_tokens".' },
    });
    const notJson = await fetch(`${stack.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":',
    });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { type: string; error: { type: string } }).error.type).toBe(
      'invalid_request_error',
    );
    expect(stack.sim.requests).toHaveLength(0);
  });

  it("an upstream error before the stream opens is an HTTP error; after it, an 'error' event", async () => {
    const { client } = await start();
    const params = { model: 'sim', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };
    const before = client.messages.create(
      params,
      scenario({ error: { status: 400, message: 'context too long' } }),
    );
    await expect(before).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(before).rejects.toMatchObject({
      error: { error: { type: 'invalid_request_error', message: 'context too long' } },
    });

    const mid = { raw: 'partial answer', error: { status: 500, message: 'engine died', midStream: true } };
    const stream = client.messages.stream(params, scenario(mid));
    const text: string[] = [];
    stream.on('text', (t) => text.push(t));
    await expect(stream.finalMessage()).rejects.toThrow(/engine died/);
  });
});

describe('client disconnect', () => {
  it('aborting the SDK stream mid-answer cancels the upstream request', async () => {
    const { stack, client } = await start();
    const slow = [{ say: 'word '.repeat(200), chunkDelayMs: 20 }];
    const stream = client.messages.stream(
      { model: 'sim', max_tokens: 2048, messages: [{ role: 'user', content: 'long answer' }] },
      scenario(slow),
    );
    let got = 0;
    stream.on('text', () => {
      if (++got === 3) stream.abort();
    });
    await expect(stream.finalMessage()).rejects.toThrow();
    await waitFor(() => stack.sim.aborts.length >= 1);
    expect(stack.sim.aborts).toHaveLength(1);
  });
});

describe('metrics and shutdown', () => {
  it('requests are counted under api="messages"', async () => {
    const { stack, client } = await start({ sim: { scenario: 'prose' } });
    await client.messages.create({
      model: 'sim',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await client.messages.countTokens({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] });
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_requests_total\{[^}]*route="messages"[^}]*api="messages"[^}]*\} 1/);
    expect(metrics).toMatch(
      /toolproof_requests_total\{[^}]*route="messages\/count_tokens"[^}]*api="messages"[^}]*\} 1/,
    );
  });

  it('a stream still open at the shutdown deadline ends with an Anthropic error event', async () => {
    const sim = await createSimulator({
      personality: 'vllm',
      scenario: [{ say: 'one two three four five six seven eight', stallAfterChunks: 2 }],
    });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      let closed: Promise<void> | undefined;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (!closed && text.includes('text_delta')) closed = shutdownGracefully(app, { graceMs: 300 });
      }
      await closed;
      const events = text.split('\n\n').filter((e) => e.trim() !== '');
      expect(events.at(-1)).toMatch(/^event: error\ndata: /);
      expect(JSON.parse(events.at(-1)!.split('\ndata: ')[1]!)).toEqual({
        type: 'error',
        error: { type: 'overloaded_error', message: expect.any(String) },
      });
      expect(text).not.toContain('[DONE]');
      await waitFor(() => sim.aborts.length >= 1);
    } finally {
      await sim.close();
    }
  });
});
