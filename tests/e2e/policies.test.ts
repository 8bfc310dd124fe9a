/**
 * End to end through the running proxy with the openai client: forced tool use, fallback
 * once (remembered), history repair against a strict backend, corrective retry, and client
 * disconnects during a fallback or a retry. The simulator records what the upstream received.
 */
import type OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { collectStream, type Stack, startStack, waitFor, weatherTool } from '../server/stack.js';

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const bodyOf = (s: Stack, i: number) =>
  s.sim.requests.filter((r) => r.path.endsWith('/chat/completions'))[i]!.body as {
    tools?: Array<{ function: { name: string } }>;
    tool_choice?: unknown;
    messages: Array<Record<string, unknown>>;
  };
const chatRequests = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

describe('forced tool use', () => {
  it('adds final_answer with tool_choice "required"; a final_answer call comes back as plain content', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'What is 2+2?' }],
      tools: [weatherTool],
    });
    const sent = bodyOf(stack, 0);
    expect(sent.tool_choice).toBe('required');
    expect(sent.tools!.map((t) => t.function.name)).toEqual(['get_weather', 'final_answer']);
    const msg = res.choices[0]!.message;
    expect(msg.tool_calls ?? []).toHaveLength(0);
    expect(msg.content).toMatch(/simulator says yes/);
    expect(res.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams the final answer as live content deltas, equal to the non-streamed answer', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    const params = {
      model: 'sim',
      messages: [{ role: 'user' as const, content: 'Explain "quotes" \\ and émoji 🎉' }],
      tools: [weatherTool],
    };
    const plain = await stack.client.chat.completions.create(params);
    const streamed = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }),
    );
    expect(streamed.calls).toHaveLength(0);
    expect(streamed.content).toBe(plain.choices[0]!.message.content);
    // Live: the answer arrives as many content deltas while final_answer's arguments stream.
    expect(streamed.contentChunks).toBeGreaterThan(5);
    expect(streamed.finish).toBe('stop');
  });

  it('final_answer together with real calls keeps both', async () => {
    const scenario = JSON.stringify([
      {
        call: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'final_answer', arguments: { answer: 'Checking Paris now.' } },
        ],
      },
    ]);
    stack = await startStack();
    for (const stream of [false, true]) {
      const params = {
        model: 'sim',
        messages: [{ role: 'user' as const, content: 'Paris?' }],
        tools: [weatherTool],
      };
      const opts = { headers: { 'x-sim-scenario': scenario } };
      if (!stream) {
        const res = await stack.client.chat.completions.create(params, opts);
        const msg = res.choices[0]!.message;
        expect(msg.content).toBe('Checking Paris now.');
        expect(msg.tool_calls!.map((c) => (c.type === 'function' ? c.function.name : ''))).toEqual([
          'get_weather',
        ]);
        expect(res.choices[0]!.finish_reason).toBe('tool_calls');
      } else {
        const r = await collectStream(
          await stack.client.chat.completions.create({ ...params, stream: true }, opts),
        );
        expect(r.content).toBe('Checking Paris now.');
        expect(r.calls.map((c) => c.name)).toEqual(['get_weather']);
        expect(JSON.parse(r.calls[0]!.args)).toEqual({ city: 'Paris' });
      }
    }
  });

  it('explicit tool_choice "none" is left alone', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    await stack.client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      tool_choice: 'none',
    });
    expect(bodyOf(stack, 0).tool_choice).toBe('none');
    expect(bodyOf(stack, 0).tools).toHaveLength(1);
  });

  it('a backend that silently ignores "required" shows up as forced-but-prose', async () => {
    stack = await startStack({ sim: { scenario: 'prose', ignoreRequired: true } });
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    expect(res.choices[0]!.message.content).toBeTruthy();
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_forced_but_prose_total\{model="sim"\} 1/);
  });
});

describe('the demo model (npm start with no upstream)', () => {
  it('its three habits (leak, prose claiming it ran the tool, proper call) all reach the client as real tool calls', async () => {
    stack = await startStack({ sim: { scenario: 'demo' } });
    const questions = [
      'Weather in Paris?',
      'Weather in Rome?',
      'Weather in Oslo?',
      'Weather in Lima?',
      'Weather in Pune?',
      'Weather in Nice?',
    ];
    for (const q of questions) {
      const res = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: q }],
        tools: [weatherTool],
      });
      const calls = res.choices[0]!.message.tool_calls ?? [];
      expect(calls, q).toHaveLength(1);
    }
    const direct = await Promise.all(
      questions.map(async (q) => {
        const r = await fetch(`${stack!.sim.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sim',
            messages: [{ role: 'user', content: q }],
            tools: [weatherTool],
          }),
        });
        const j = (await r.json()) as { choices: Array<{ message: { tool_calls?: unknown[] } }> };
        return (j.choices[0]!.message.tool_calls ?? []).length;
      }),
    );
    // Without toolproof (tool_choice auto) some of the same questions get no structured call.
    expect(direct.filter((n) => n === 0).length).toBeGreaterThan(0);
  });
});

describe('fallback once', () => {
  it('a backend that rejects "required" gets "auto" once, and toolproof remembers', async () => {
    stack = await startStack({ sim: { scenario: 'prose', rejectRequired: true } });
    const ask = () =>
      stack!.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
      });
    const first = await ask();
    expect(first.choices[0]!.message.content).toBeTruthy();
    expect(chatRequests(stack)).toHaveLength(2);
    expect(bodyOf(stack, 0).tool_choice).toBe('required');
    expect(bodyOf(stack, 1).tool_choice).toBe('auto');
    expect(bodyOf(stack, 1).tools!.map((t) => t.function.name)).toContain('final_answer');
    await ask();
    expect(chatRequests(stack)).toHaveLength(3);
    expect(bodyOf(stack, 2).tool_choice).toBe('auto');
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_tool_choice_fallbacks_total\{[^}]*model="sim"[^}]*\} 1/);
    expect(metrics).toMatch(/toolproof_tool_choice_fallback_active\{[^}]*\} 1/);
  });

  it('the same for a streaming request', async () => {
    stack = await startStack({
      sim: { personality: 'llama-server', scenario: 'prose', rejectRequired: true },
    });
    const r = await collectStream(
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
        stream: true,
      }),
    );
    expect(r.content.length).toBeGreaterThan(0);
    expect(chatRequests(stack).map((q) => (q.body as { tool_choice: string }).tool_choice)).toEqual([
      'required',
      'auto',
    ]);
  });

  it('other errors are relayed, never retried as a fallback', async () => {
    stack = await startStack({
      sim: {
        scenario: JSON.parse(
          '[{"error":{"status":400,"message":"This model\'s maximum context length is 4096 tokens"}}]',
        ),
      },
    });
    await expect(
      stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect(chatRequests(stack)).toHaveLength(1);
  });
});

describe('history repair against a strict backend', () => {
  const broken: Msg[] = [
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Rome",}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_a', content: '{"temp": 21}' },
    { role: 'user', content: 'And tomorrow?' },
  ];

  it('the unrepaired history is rejected by the strict backend directly, the repaired one is accepted', async () => {
    stack = await startStack({ sim: { scenario: 'prose', strictHistory: true } });
    const direct = await fetch(`${stack.sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: broken, tools: [weatherTool] }),
    });
    expect(direct.status).toBeGreaterThanOrEqual(400);
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      messages: broken,
      tools: [weatherTool],
    });
    expect(res.choices[0]!.message.content).toBeTruthy();
    const sent = bodyOf(stack, 1).messages;
    const toolMsgs = sent.filter((m) => m.role === 'tool');
    expect(toolMsgs.map((m) => m.tool_call_id)).toEqual(['call_a', 'call_b']);
    const args = (sent[1]!.tool_calls as Array<{ function: { arguments: string } }>).map(
      (c) => c.function.arguments,
    );
    for (const a of args) expect(() => JSON.parse(a)).not.toThrow();
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_history_repairs_total\{[^}]*\} [1-9]/);
  });
});

describe('full agent loops', () => {
  async function agentLoop(s: Stack) {
    const messages: Msg[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await s.client.chat.completions.create({ model: 'sim', messages, tools: [weatherTool] });
    const m1 = first.choices[0]!.message;
    expect(m1.tool_calls?.length, `first turn content: ${m1.content}`).toBeGreaterThan(0);
    messages.push(m1 as Msg);
    for (const call of m1.tool_calls!)
      messages.push({ role: 'tool', tool_call_id: call.id, content: '{"temp_c": 18, "sky": "clear"}' });
    const second = await s.client.chat.completions.create({ model: 'sim', messages, tools: [weatherTool] });
    const m2 = second.choices[0]!.message;
    expect(m2.tool_calls ?? []).toHaveLength(0);
    expect(m2.content).toMatch(/tool result/);
    return { first, second };
  }

  it('against a backend that leaks (and ignores required)', async () => {
    stack = await startStack({ sim: { scenario: 'leak-qwen3-coder', ignoreRequired: true } });
    await agentLoop(stack);
  });

  it('against a backend that rejects "required"', async () => {
    stack = await startStack({
      sim: { personality: 'llama-server', scenario: 'leak-hermes', rejectRequired: true },
    });
    await agentLoop(stack);
  });

  it('against a backend that is strict about history', async () => {
    stack = await startStack({ sim: { scenario: 'tools', strictHistory: true } });
    await agentLoop(stack);
  });
});

describe('corrective retry', () => {
  const badThenGood = JSON.stringify([
    { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 'three' } }] },
    { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }] },
  ]);

  it('a call that fails the schema is re-asked once with a precise correction', async () => {
    stack = await startStack();
    const { data, response } = await stack.client.chat.completions
      .create(
        { model: 'sim', messages: [{ role: 'user', content: 'Paris, 3 days' }], tools: [weatherTool] },
        { headers: { 'x-sim-scenario': badThenGood } },
      )
      .withResponse();
    const call = data.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', days: 3 });
    expect(response.headers.get('x-toolproof-attempts')).toBe('2');
    const retry = bodyOf(stack, 1).messages;
    const feedback = retry
      .filter((m) => m.role === 'tool')
      .map((m) => String(m.content))
      .join('\n');
    expect(feedback).toContain('days');
    expect(feedback).toMatch(/integer/);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_retries_total\{[^}]*outcome="fixed"[^}]*\} 1/);
  });

  it('streaming: tool calls are held until validated, then the good attempt is streamed', async () => {
    stack = await startStack();
    const r = await collectStream(
      await stack.client.chat.completions.create(
        {
          model: 'sim',
          messages: [{ role: 'user', content: 'Paris, 3 days' }],
          tools: [weatherTool],
          stream: true,
        },
        { headers: { 'x-sim-scenario': badThenGood } },
      ),
    );
    expect(r.calls).toHaveLength(1);
    expect(JSON.parse(r.calls[0]!.args)).toEqual({ city: 'Paris', days: 3 });
    expect(chatRequests(stack)).toHaveLength(2);
  });

  it('an unparsable leak is re-asked, showing the expected call format', async () => {
    const scenario = JSON.stringify([
      { raw: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"]]}\n</tool_call>' },
      { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    ]);
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'Paris?' }], tools: [weatherTool] },
      { headers: { 'x-sim-scenario': scenario } },
    );
    const call = res.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(chatRequests(stack)).toHaveLength(2);
    const feedback = JSON.stringify(bodyOf(stack, 1).messages.slice(2));
    expect(feedback).toMatch(/could not be parsed|not be parsed|parse/i);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_leaks_total\{[^}]*outcome="unrecovered"[^}]*\} 1/);
  });

  it('a second failure is returned as it is, never looped', async () => {
    const alwaysBad = JSON.stringify([
      { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 'three' } }] },
    ]);
    stack = await startStack();
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'x' }], tools: [weatherTool] },
      { headers: { 'x-sim-scenario': alwaysBad } },
    );
    const call = res.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', days: 'three' });
    expect(chatRequests(stack)).toHaveLength(2);
  });
});

describe('client disconnect during a fallback or a retry aborts the upstream request', () => {
  /** Sends a tools request, and hangs up once the upstream has received its second attempt. */
  async function hangUpDuringSecondAttempt(s: Stack, headers: Record<string, string> = {}): Promise<void> {
    const ac = new AbortController();
    const p = fetch(`${s.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
      }),
      signal: ac.signal,
    }).catch(() => null);
    await waitFor(() => chatRequests(s).length >= 2);
    ac.abort();
    await p;
    await waitFor(() => s.sim.aborts.length >= 1);
  }

  it('during the fallback attempt', async () => {
    stack = await startStack({ sim: { rejectRequired: true, scenario: [{ say: 'slow', delayMs: 3_000 }] } });
    await hangUpDuringSecondAttempt(stack);
    expect(stack.sim.aborts).toHaveLength(1);
    expect(stack.sim.aborts[0]!.requestIndex).toBe(stack.sim.requests.indexOf(chatRequests(stack)[1]!));
  });

  it('during the corrective retry', async () => {
    const scenario = JSON.stringify([
      { call: [{ name: 'get_weather', arguments: { city: 3 } }] },
      { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }], delayMs: 3_000 },
    ]);
    stack = await startStack();
    await hangUpDuringSecondAttempt(stack, { 'x-sim-scenario': scenario });
    expect(stack.sim.aborts).toHaveLength(1);
    expect(stack.sim.aborts[0]!.requestIndex).toBe(stack.sim.requests.indexOf(chatRequests(stack)[1]!));
  });
});
