/**
 * End to end (issue 9): what the client asked for holds on what it gets, through the running
 * proxy with the openai client, streamed and not. The simulator plays the backend; for what it
 * cannot play (n > 1, a structured call despite "none") a scripted fake upstream on loopback does.
 * Written against HTTP behaviour only.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { collectStream, type Stack, startStack, weatherTool } from '../server/stack.js';

let stack: Stack | undefined;
let fake: Server | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await new Promise<void>((r) => (fake ? fake.close(() => r()) : r()));
  fake = undefined;
});

const timeTool = {
  type: 'function' as const,
  function: { name: 'get_time', description: 'Current time', parameters: { type: 'object', properties: {} } },
};
const tools = [weatherTool, timeTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const chatRequests = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const sentBody = (s: Stack, i: number) => chatRequests(s)[i]!.body as Record<string, unknown>;
const scenario = (v: unknown) => ({ headers: { 'x-sim-scenario': JSON.stringify(v) } });
/** The openai client types a call as function or custom: the name of a function call. */
const callName = (c: { type: string; function?: { name: string } }) =>
  c.type === 'function' && c.function ? c.function.name : c.type;
const metricsOf = async (s: Stack) => (await fetch(`${s.origin}/metrics`)).text();

describe('an unrelated 5xx on a forced request is relayed, never a fallback, never remembered', () => {
  for (const [status, message] of [
    [503, 'Loading model'],
    [500, 'CUDA out of memory. Tried to allocate 2.00 GiB'],
    [500, 'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj'],
  ] as const) {
    it(`${status} ${message.slice(0, 24)}…`, async () => {
      stack = await startStack({
        sim: { scenario: [{ error: { status, message } }, { say: 'ok' }] as never },
      });
      for (const stream of [false, true]) {
        await expect(
          stream
            ? stack.client.chat.completions.create({ model: 'sim', messages: user, tools, stream: true })
            : stack.client.chat.completions.create({ model: 'sim', messages: user, tools }),
        ).rejects.toMatchObject({ status });
      }
      // One upstream request per client request (no second "auto" attempt), and every one forced.
      const sent = chatRequests(stack).map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
      expect(sent).toEqual(['required', 'required']);
      expect(await metricsOf(stack)).not.toMatch(/toolproof_tool_choice_fallbacks_total\{[^}]*\} [1-9]/);
    });
  }
});

describe('tool_choice "none"', () => {
  // The simulator, like the real backends, runs no tool parser with "none": the call is text.
  it('leaked call text stays content byte for byte (no tool_calls), streamed and not', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const opts = scenario({ call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
    const params = { model: 'sim', messages: user, tools, tool_choice: 'none' as const };
    const res = await stack.client.chat.completions.create(params, opts);
    const msg = res.choices[0]!.message;
    expect(msg.tool_calls ?? []).toHaveLength(0);
    expect(msg.content).toContain('<tool_call>');
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const s = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }, opts),
    );
    expect(s.calls).toHaveLength(0);
    expect(s.content).toBe(msg.content);
    expect(s.finish).toBe('stop');
    expect(await metricsOf(stack)).toMatch(/toolproof_leaks_total\{[^}]*outcome="suppressed"[^}]*\} 2/);
  });
});

describe('a named tool_choice is enforced (llama-server ignores it)', () => {
  const script = [
    { call: [{ name: 'get_time', arguments: {} }] },
    { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
  ];
  const named = { type: 'function' as const, function: { name: 'get_weather' } };

  it('a call to another tool is re-asked; the client gets the named tool', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const params = { model: 'sim', messages: user, tools, tool_choice: named };
    const res = await stack.client.chat.completions.create(params, scenario(script));
    expect(res.choices[0]!.message.tool_calls?.map(callName)).toEqual(['get_weather']);
    const retry = sentBody(stack, 1).messages as Array<{ role: string; content: unknown }>;
    expect(String(retry.at(-1)!.content)).toContain('You must call the tool `get_weather`');
    const s = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }, scenario(script)),
    );
    expect(s.calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(s.finish).toBe('tool_calls');
  });
});

describe('tool_choice "required" answered in prose', () => {
  const script = [
    { say: 'It is sunny in Paris.' },
    { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
  ];

  it('is re-asked; the prose never reaches the client, streamed and not', async () => {
    stack = await startStack({ sim: { personality: 'llama-server', ignoreRequired: true } });
    const params = { model: 'sim', messages: user, tools, tool_choice: 'required' as const };
    const res = await stack.client.chat.completions.create(params, scenario(script));
    expect(res.choices[0]!.message.tool_calls?.map(callName)).toEqual(['get_weather']);
    expect(res.choices[0]!.message.content ?? '').not.toContain('sunny');
    const s = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }, scenario(script)),
    );
    expect(s.calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(s.content).not.toContain('sunny');
    const retry = sentBody(stack, 1).messages as Array<{ role: string; content: unknown }>;
    expect(String(retry.at(-1)!.content)).toContain('do not answer in prose');
  });
});

describe('parallel_tool_calls false', () => {
  it('at most one call reaches the client, streamed and not', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const opts = scenario({
      leak: {
        format: 'hermes',
        calls: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'get_time', arguments: {} },
        ],
      },
    });
    const params = {
      model: 'sim',
      messages: user,
      tools,
      tool_choice: 'auto' as const,
      parallel_tool_calls: false,
    };
    const res = await stack.client.chat.completions.create(params, opts);
    expect(res.choices[0]!.message.tool_calls?.map(callName)).toEqual(['get_weather']);
    const s = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }, opts),
    );
    expect(s.calls.map((c) => c.name)).toEqual(['get_weather']);
  });
});

describe('final_answer called with another key', () => {
  it('a lone string field is the answer, streamed live and not', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const opts = scenario({
      call: [{ name: 'final_answer', arguments: { response: 'It is sunny in Paris, 21 degrees.' } }],
    });
    const params = { model: 'sim', messages: user, tools };
    const res = await stack.client.chat.completions.create(params, opts);
    expect(res.choices[0]!.message.content).toBe('It is sunny in Paris, 21 degrees.');
    expect(res.choices[0]!.message.tool_calls ?? []).toHaveLength(0);
    const s = await collectStream(
      await stack.client.chat.completions.create({ ...params, stream: true }, opts),
    );
    expect(s.content).toBe('It is sunny in Paris, 21 degrees.');
    // Live: the answer arrives in several deltas while the call's arguments stream.
    expect(s.contentChunks).toBeGreaterThan(1);
    expect(s.calls).toHaveLength(0);
    expect(s.finish).toBe('stop');
  });

  it('no answer string: re-asked with {"answer": ...} feedback, never raw JSON to the client', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const opts = scenario([
      { call: [{ name: 'final_answer', arguments: { n: 1 } }] },
      { call: [{ name: 'final_answer', arguments: { answer: 'Sunny.' } }] },
    ]);
    for (const stream of [false, true]) {
      const params = { model: 'sim', messages: user, tools };
      const content = stream
        ? (await collectStream(await stack.client.chat.completions.create({ ...params, stream: true }, opts)))
            .content
        : (await stack.client.chat.completions.create(params, opts)).choices[0]!.message.content;
      expect(content).toBe('Sunny.');
    }
    const retry = sentBody(stack, 1).messages as Array<{ role: string; content: unknown }>;
    expect(String(retry.at(-1)!.content)).toContain('{"answer": "<your complete reply>"}');
  });
});

describe('logprobs', () => {
  it('a request asking for logprobs is not forced (they would describe the final_answer JSON)', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    await stack.client.chat.completions.create({
      model: 'sim',
      messages: user,
      tools,
      logprobs: true,
      top_logprobs: 2,
    });
    await collectStream(
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: user,
        tools,
        logprobs: true,
        stream: true,
      }),
    );
    for (const i of [0, 1]) {
      const body = sentBody(stack, i) as {
        tool_choice?: unknown;
        tools: Array<{ function: { name: string } }>;
      };
      expect(body.tool_choice).toBeUndefined();
      expect(body.tools.map((t) => t.function.name)).not.toContain('final_answer');
    }
  });
});

/** A fake upstream answering every chat request with `reply(body)` (JSON, or SSE payloads). */
async function fakeUpstream(reply: (body: Record<string, unknown>) => { json?: unknown; sse?: unknown[] }) {
  fake = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const out = reply(JSON.parse(raw || '{}') as Record<string, unknown>);
      if (out.sse) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const p of out.sse) res.write(`data: ${JSON.stringify(p)}\n\n`);
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out.json));
      }
    });
  });
  await new Promise<void>((r) => fake!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(fake!.address() as AddressInfo).port}/v1`;
}

const LEAK = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const base = { id: 'chatcmpl-f', created: 1, model: 'sim' };
const delta = (index: number, d: Record<string, unknown>, finish: string | null = null) => ({
  ...base,
  object: 'chat.completion.chunk',
  choices: [{ index, delta: d, finish_reason: finish }],
});

describe('n > 1: every choice gets leak recovery', () => {
  it('a call leaked in choice 1 reaches the client as a call, streamed and not', async () => {
    const url = await fakeUpstream((body) =>
      body.stream
        ? {
            sse: [
              delta(0, { role: 'assistant', content: '' }),
              delta(1, { role: 'assistant', content: '' }),
              delta(0, { content: 'It is sunny.' }),
              delta(1, { content: LEAK.slice(0, 20) }),
              delta(1, { content: LEAK.slice(20) }),
              delta(0, {}, 'stop'),
              delta(1, {}, 'stop'),
            ],
          }
        : {
            json: {
              ...base,
              object: 'chat.completion',
              choices: [
                { index: 0, message: { role: 'assistant', content: 'It is sunny.' }, finish_reason: 'stop' },
                { index: 1, message: { role: 'assistant', content: LEAK }, finish_reason: 'stop' },
              ],
            },
          },
    );
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: url } });
    const params = { model: 'sim', messages: user, tools, n: 2 };
    const res = await stack.client.chat.completions.create(params);
    expect(res.choices[1]!.message.tool_calls?.map(callName)).toEqual(['get_weather']);
    const stream = await stack.client.chat.completions.create({ ...params, stream: true });
    const byChoice = new Map<number, { content: string; calls: string[]; finish: string | null }>();
    for await (const c of stream) {
      for (const ch of c.choices) {
        const cur = byChoice.get(ch.index) ?? { content: '', calls: [], finish: null };
        cur.content += ch.delta.content ?? '';
        for (const tc of ch.delta.tool_calls ?? []) if (tc.function?.name) cur.calls.push(tc.function.name);
        if (ch.finish_reason) cur.finish = ch.finish_reason;
        byChoice.set(ch.index, cur);
      }
    }
    expect(byChoice.get(1)).toEqual({ content: '', calls: ['get_weather'], finish: 'tool_calls' });
    expect(byChoice.get(0)).toEqual({ content: 'It is sunny.', calls: [], finish: 'stop' });
  });
});

describe('tool_choice "none": a structured call the backend returned anyway', () => {
  it('reaches the client as text, never as a call, streamed and not', async () => {
    const call = {
      id: 'c1',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    };
    const url = await fakeUpstream((body) =>
      body.stream
        ? {
            sse: [
              delta(0, { role: 'assistant', content: '' }),
              delta(0, { tool_calls: [{ index: 0, ...call }] }),
              delta(0, {}, 'tool_calls'),
            ],
          }
        : {
            json: {
              ...base,
              object: 'chat.completion',
              choices: [
                {
                  index: 0,
                  message: { role: 'assistant', content: null, tool_calls: [call] },
                  finish_reason: 'tool_calls',
                },
              ],
            },
          },
    );
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: url } });
    const params = { model: 'sim', messages: user, tools, tool_choice: 'none' as const };
    const res = await stack.client.chat.completions.create(params);
    const text = '{"name":"get_weather","arguments":{"city":"Paris"}}';
    expect(res.choices[0]!.message.tool_calls ?? []).toHaveLength(0);
    expect(res.choices[0]!.message.content).toBe(text);
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const s = await collectStream(await stack.client.chat.completions.create({ ...params, stream: true }));
    expect(s).toMatchObject({ content: text, calls: [], finish: 'stop' });
  });
});
