/**
 * POST /v1/responses end to end with the `openai` client (`responses.create`,
 * `responses.stream`) against the simulator: the forced final answer arrives as live text
 * deltas, a leaked `<tool_call>` arrives as a function_call item, a tool loop keeps its call
 * ids, streamed and non-streamed answers agree, and what toolproof cannot do is a 400 naming
 * the field.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, waitFor } from '../server/stack.js';

type Res = OpenAI.Responses.Response;
type Event = OpenAI.Responses.ResponseStreamEvent;

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city'],
  },
  strict: false,
};

const scenario = (s: string) => ({ headers: { 'x-sim-scenario': s } });
const chatBodies = (s: Stack) =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body as Record<string, unknown>);

/** Streams with responses.stream and returns every event plus the final response. */
async function streamed(
  stack: Stack,
  params: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'stream'>,
  opts?: object,
) {
  const stream = stack.client.responses.stream(params, opts);
  const events: Event[] = [];
  for await (const e of stream) events.push(e);
  await stream.finalResponse();
  // The server's own closing snapshot (finalResponse() adds the client's parsed_* fields).
  const last = events.at(-1) as { response?: Res } | undefined;
  return { events, final: last!.response! };
}

/** A response with its random ids and clock replaced, for comparing two answers. */
function normalized(r: Res): unknown {
  const ids = new Map<string, string>();
  const id = (v: string) => {
    if (!ids.has(v)) ids.set(v, `id${ids.size}`);
    return ids.get(v);
  };
  return JSON.parse(
    // cached_tokens: the simulated backend's prefix cache serves the second of two equal requests.
    JSON.stringify({ ...r, created_at: 0 }, (k, v) =>
      (k === 'id' || k === 'call_id') && typeof v === 'string' ? id(v) : k === 'cached_tokens' ? 0 : v,
    ),
  );
}

describe('Responses API with forced tool use (default settings)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('requests are counted under api="responses" (metrics)', async () => {
    await stack.client.responses.create({ model: 'sim', input: 'hi', tools: [weather] }, scenario('prose'));
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_requests_total\{[^}]*route="responses"[^}]*api="responses"[^}]*\} \d/);
  });

  it('responses.create: the forced final answer comes back as output_text, not a call', async () => {
    stack.sim.reset();
    const res = await stack.client.responses.create(
      { model: 'sim', input: 'What is 2+2?', tools: [weather], instructions: 'Be brief.' },
      scenario('prose'),
    );
    const sent = chatBodies(stack)[0]!;
    expect(sent.tool_choice).toBe('required');
    expect((sent.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual([
      'get_weather',
      'final_answer',
    ]);
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is 2+2?' },
    ]);
    expect(res.status).toBe('completed');
    expect(res.output.map((i) => i.type)).toEqual(['message']);
    expect(res.output_text).toMatch(/simulator says yes/);
    expect(res.id).toMatch(/^resp_/);
    expect(res.output[0]!.id).toMatch(/^msg_/);
    expect(res.usage!.total_tokens).toBe(res.usage!.input_tokens + res.usage!.output_tokens);
    expect(res.usage!.output_tokens).toBeGreaterThan(0);
  });

  it('responses.stream: the forced final answer arrives as many live output_text deltas', async () => {
    const params = { model: 'sim', input: 'Explain "quotes" \\ and émoji 🎉', tools: [weather] };
    const plain = await stack.client.responses.create(params, scenario('prose'));
    const { events, final } = await streamed(stack, params, scenario('prose'));
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.map((d) => d.delta).join('')).toBe(plain.output_text);
    expect(final.output_text).toBe(plain.output_text);
    expect(events.some((e) => e.type === 'response.function_call_arguments.delta')).toBe(false);
    expect(normalized(final)).toEqual(normalized(plain));
  });

  it('streams the full event sequence, numbered from 0 without gaps', async () => {
    const { events } = await streamed(
      stack,
      { model: 'sim', input: 'Hi', tools: [weather] },
      scenario('prose'),
    );
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(done.response.usage!.output_tokens).toBeGreaterThan(0);
    const added = events[2] as OpenAI.Responses.ResponseOutputItemAddedEvent;
    for (const e of events.slice(3, -1))
      expect(e).toMatchObject({ output_index: 0, ...('item_id' in e ? { item_id: added.item.id } : {}) });
  });

  it('a tool loop keeps call ids: function_call -> function_call_output -> final answer', async () => {
    stack.sim.reset();
    const first = await stack.client.responses.create(
      { model: 'sim', input: 'Weather in Paris?', tools: [weather] },
      scenario('tools'),
    );
    const call = first.output.find(
      (i) => i.type === 'function_call',
    ) as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(call.id).toMatch(/^fc_/);
    expect(JSON.parse(call.arguments)).toMatchObject({ city: expect.any(String) });
    const second = await stack.client.responses.create(
      {
        model: 'sim',
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          ...first.output,
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp":21}' },
        ] as OpenAI.Responses.ResponseInput,
        tools: [weather],
      },
      scenario('tools'),
    );
    const sent = chatBodies(stack)[1]!.messages as Array<Record<string, unknown>>;
    expect(sent.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.call_id,
            type: 'function',
            function: { name: 'get_weather', arguments: call.arguments },
          },
        ],
      },
      { role: 'tool', tool_call_id: call.call_id, content: '{"temp":21}' },
    ]);
    expect(second.output.map((i) => i.type)).toEqual(['message']);
    expect(second.output_text.length).toBeGreaterThan(0);
  });

  it('streams a function_call item with its arguments, equal to the non-streamed one', async () => {
    const params = { model: 'sim', input: 'Weather in Paris for 3 days?', tools: [weather] };
    const plain = await stack.client.responses.create(params, scenario('tools'));
    const { events, final } = await streamed(stack, params, scenario('tools'));
    const args = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(args.length).toBeGreaterThan(0);
    const done = events.find((e) => e.type === 'response.function_call_arguments.done');
    expect(done).toMatchObject({ arguments: args.map((a) => a.delta).join('') });
    expect(normalized(final)).toEqual(normalized(plain));
  });

  it('max_output_tokens: a length cut is status "incomplete" (max_output_tokens), streamed and not', async () => {
    const params = { model: 'sim', input: 'Say a lot', max_output_tokens: 5 };
    const plain = await stack.client.responses.create(params, scenario('prose'));
    expect(plain.status).toBe('incomplete');
    expect(plain.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(chatBodies(stack).at(-1)!.max_tokens).toBe(5);
    const { events, final } = await streamed(stack, params, scenario('prose'));
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(normalized(final)).toEqual(normalized(plain));
  });

  it('reasoning arrives as a reasoning item (rs_) before the message, streamed and not', async () => {
    const think = JSON.stringify({ think: 'Two and two make four.', say: 'Four.' });
    const params = { model: 'sim', input: 'What is 2+2?' };
    const plain = await stack.client.responses.create(params, scenario(think));
    expect(plain.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    const rs = plain.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(rs.id).toMatch(/^rs_/);
    expect(rs.content).toEqual([{ type: 'reasoning_text', text: 'Two and two make four.' }]);
    expect(plain.output_text).toBe('Four.');
    const { events, final } = await streamed(stack, params, scenario(think));
    expect(events.filter((e) => e.type === 'response.reasoning_text.delta').length).toBeGreaterThan(0);
    expect(normalized(final)).toEqual(normalized(plain));
  });

  it('a failure after the stream opened is an error event, then response.failed', async () => {
    const boom = JSON.stringify({
      raw: 'partial ',
      error: { status: 500, message: 'kv cache exhausted', midStream: true },
    });
    const res = await fetch(`${stack.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-scenario': boom },
      body: JSON.stringify({ model: 'sim', input: 'Hi', stream: true }),
    });
    expect(res.status).toBe(200);
    const events = (await res.text())
      .split('\n\n')
      .filter((b) => b.includes('data: '))
      .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)) as { type: string; [k: string]: unknown });
    const types = events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(['error', 'response.failed']);
    expect(events.at(-2)).toMatchObject({ message: expect.stringMatching(/kv cache exhausted/) });
    expect(events.at(-1)).toMatchObject({
      response: { status: 'failed', error: { message: expect.any(String) } },
    });
    // The openai client raises the error event as an APIError.
    await expect(streamed(stack, { model: 'sim', input: 'Hi' }, scenario(boom))).rejects.toThrow(
      /kv cache exhausted/,
    );
  });

  it('a client that goes away mid-stream cancels the upstream request', async () => {
    stack.sim.reset();
    const slow = JSON.stringify({ say: 'word '.repeat(200), chunkDelayMs: 20 });
    const ac = new AbortController();
    const stream = await stack.client.responses.create(
      { model: 'sim', input: 'Hi', stream: true },
      { ...scenario(slow), signal: ac.signal },
    );
    let deltas = 0;
    try {
      for await (const e of stream) {
        if (e.type !== 'response.output_text.delta') continue;
        deltas++;
        ac.abort();
      }
    } catch {
      // an aborted read may end the iteration with an abort error
    }
    expect(deltas).toBe(1);
    await waitFor(() => stack.sim.aborts.length >= 1);
    expect(stack.sim.aborts).toHaveLength(1);
  });

  it('text.format json_schema, temperature, top_p and reasoning effort reach the chat request (parallel_tool_calls without tools does not)', async () => {
    stack.sim.reset();
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    const res = await stack.client.responses.create(
      {
        model: 'sim',
        input: [
          { role: 'developer', content: [{ type: 'input_text', text: 'JSON only.' }] },
          { role: 'user', content: 'n?' },
        ],
        text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
        temperature: 0.2,
        top_p: 0.9,
        reasoning: { effort: 'low' as const },
        parallel_tool_calls: false,
        metadata: { trace: 'abc' },
        store: false,
        include: ['reasoning.encrypted_content'],
      },
      scenario('prose'),
    );
    const sent = chatBodies(stack)[0]!;
    expect(sent).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
      temperature: 0.2,
      top_p: 0.9,
      reasoning_effort: 'low',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'JSON only.' }] },
        { role: 'user', content: 'n?' },
      ],
    });
    expect(sent).not.toHaveProperty('metadata');
    // A tool-only field in a request without tools (policies/tool-fields).
    expect(sent).not.toHaveProperty('parallel_tool_calls');
    expect(JSON.parse(res.output_text)).toMatchObject({ n: expect.any(Number) });
    expect(res.metadata).toEqual({ trace: 'abc' });
  });
});

describe('Responses API: leak recovery (forced tool use off)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  it('a leaked <tool_call> arrives as a function_call item, streamed and not', async () => {
    const params = { model: 'sim', input: 'Weather in Paris for 3 days?', tools: [weather] };
    const plain = await stack.client.responses.create(params, scenario('leak-hermes'));
    const calls = plain.output.filter((i) => i.type === 'function_call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'get_weather', call_id: expect.any(String) });
    expect(JSON.stringify(plain.output)).not.toContain('<tool_call>');
    const { events, final } = await streamed(stack, params, scenario('leak-hermes'));
    expect(events.some((e) => e.type === 'response.function_call_arguments.delta')).toBe(true);
    expect(JSON.stringify(events)).not.toContain('tool_call>');
    expect(normalized(final)).toEqual(normalized(plain));
  });
});

describe('Responses API in front of llama-server (simulated)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
  });
  afterAll(() => stack.close());

  it('forced final answer and a tool call, streamed equal to non-streamed', async () => {
    for (const s of ['prose', 'tools']) {
      const params = {
        model: 'sim',
        input: 'Weather in Paris?',
        tools: [weather],
        reasoning: { effort: 'low' as const },
      };
      const plain = await stack.client.responses.create(params, scenario(s));
      expect(plain.status).toBe('completed');
      expect(plain.output.map((i) => i.type)).toEqual([s === 'prose' ? 'message' : 'function_call']);
      const { final } = await streamed(stack, params, scenario(s));
      expect(normalized(final)).toEqual(normalized(plain));
    }
  });
});

describe('Responses API: what toolproof cannot do is a 400 naming the field', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['unknown tool type', { tools: [weather, { type: 'teleport' }] }, 'tools[1].type', /teleport/],
    ['previous_response_id', { previous_response_id: 'resp_123' }, 'previous_response_id', /not held/],
    [
      'hosted tool_choice',
      { tool_choice: { type: 'web_search_preview' } },
      'tool_choice',
      /web_search_preview/,
    ],
    ['wrong type', { max_output_tokens: 'many' }, 'max_output_tokens', /max_output_tokens/],
    ['missing model', { model: undefined }, 'model', /model/],
    [
      'input_image with neither image_url nor file_id',
      { input: [{ role: 'user', content: [{ type: 'input_image', detail: 'auto' }] }] },
      'input[0].content[0]',
      /image_url .* or a file_id/,
    ],
  ];
  for (const [name, patch, param, message] of cases) {
    it(name, async () => {
      const res = await fetch(`${stack.url}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim', input: 'Hi', ...patch }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { param: string; message: string; type: string } };
      expect(body.error).toMatchObject({ param, type: 'invalid_request_error' });
      expect(body.error.message).toMatch(message);
    });
  }

  it('the openai client surfaces it as a BadRequestError', async () => {
    await expect(
      stack.client.responses.create({
        model: 'sim',
        input: 'Hi',
        tools: [{ type: 'teleport' } as never],
      }),
    ).rejects.toMatchObject({ status: 400, param: 'tools[0].type' });
  });
});
