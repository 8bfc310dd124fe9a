/**
 * Structured output with tools, on every door, streamed and not, through the official SDKs: a
 * request with tools AND a JSON schema for the answer (chat `response_format`, Responses
 * `text.format`, Messages `output_format` / `output_config.format`) is forced like any tool
 * request. The answer tool's parameters are the client's schema, the upstream gets no
 * response_format, the answer comes back as the JSON text the client expects, validated (one
 * re-ask with feedback), streamed == non-streamed. The simulator reproduces vLLM's bug
 * (vllm-project/vllm#39929, #16313): with a response_format beside tools no tool call comes back,
 * so without the fix the tool is never called.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScenarioFn } from '../../simulator/index.js';
import { collectStream, type Stack, startStack } from '../server/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'integer' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};
const ANSWER = '{"city":"Paris","celsius":21}';

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** Calls get_weather first; once its result is in, answers `answers[i]` (the i-th answer turn). */
function model(answers: string[]): ScenarioFn {
  let answered = 0;
  return (ctx) => {
    const results = ctx.messages.filter((m) => m?.role === 'tool').length;
    if (results === 0 && ctx.tools.some((t) => t.function?.name === 'get_weather'))
      return { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
    return { say: answers[Math.min(answered++, answers.length - 1)]! };
  };
}

async function start(answers = [ANSWER], file?: NonNullable<Parameters<typeof startStack>[0]>['file']) {
  stack = await startStack({
    sim: { scenario: model(answers), formatSuppressesTools: true },
    ...(file ? { file } : {}),
  });
  return stack;
}

const chatHistory = [
  { role: 'user' as const, content: 'Weather in Paris, as JSON?' },
  {
    role: 'assistant' as const,
    content: null,
    tool_calls: [
      {
        id: 'call_1',
        type: 'function' as const,
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      },
    ],
  },
  { role: 'tool' as const, tool_call_id: 'call_1', content: '{"celsius":21}' },
];

function upstreamBodies(s: Stack) {
  return s.sim.requests.map((r) => r.body as Record<string, unknown>);
}

function expectForcedWithSchema(s: Stack, schema: object = SCHEMA) {
  for (const body of upstreamBodies(s)) {
    expect(body.response_format).toBeUndefined();
    expect(body.tool_choice).toBe('required');
    const tools = body.tools as Array<{ function: { name: string; parameters: unknown } }>;
    const answer = tools.find((t) => t.function.name === 'final_answer');
    expect(answer?.function.parameters).toEqual(schema);
  }
}

const chatFormat = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: SCHEMA } };

async function chatTurn(s: Stack, stream: boolean, extra: object = {}, messages: unknown[] = chatHistory) {
  const body = { model: 'm', messages, tools: [weather], response_format: chatFormat, ...extra } as never;
  if (!stream) {
    const r = await s.client.chat.completions.create(body);
    const m = r.choices[0]!.message;
    return {
      content: m.content,
      calls: (m.tool_calls ?? []).map((c) => (c as { function: { name: string } }).function.name),
      finish: r.choices[0]!.finish_reason,
    };
  }
  const c = await collectStream(
    (await s.client.chat.completions.create({ ...(body as object), stream: true } as never)) as never,
  );
  return { content: c.content || null, calls: c.calls.map((x) => x.name), finish: c.finish };
}

describe('chat completions: response_format json_schema beside tools', () => {
  for (const stream of [false, true]) {
    it(`the tool is called, then the answer is the schema's JSON${stream ? ' (streamed)' : ''}`, async () => {
      const s = await start();
      const first = await chatTurn(s, stream, {}, [chatHistory[0]]);
      expect(first.calls).toEqual(['get_weather']);
      const second = await chatTurn(s, stream);
      expect(second.calls).toEqual([]);
      expect(JSON.parse(second.content!)).toEqual({ city: 'Paris', celsius: 21 });
      expect(second.content).toBe(ANSWER);
      expect(second.finish).toBe('stop');
      expectForcedWithSchema(s);
    });

    it(`an answer that misses the schema is re-asked once with what to fix${stream ? ' (streamed)' : ''}`, async () => {
      const s = await start(['{"city":"Paris","celsius":"warm"}', ANSWER]);
      const r = await chatTurn(s, stream);
      expect(r.content).toBe(ANSWER);
      expect(s.sim.requests).toHaveLength(2);
      const feedback = JSON.stringify(upstreamBodies(s)[1]!.messages);
      expect(feedback).toContain('does not match the answer');
      expect(feedback).toContain('celsius');
      expect(feedback).toContain('Call final_answer again');
    });

    it(`a schema that is not an object is wrapped under one key; the client gets the bare value${stream ? ' (streamed)' : ''}`, async () => {
      const schema = { type: 'array', items: { type: 'string' } };
      const s = await start(['["sunny","mild"]']);
      const r = await chatTurn(s, stream, {
        response_format: { type: 'json_schema', json_schema: { name: 'list', schema } },
      });
      expect(r.content).toBe('["sunny","mild"]');
      expectForcedWithSchema(s, {
        type: 'object',
        properties: { answer: schema },
        required: ['answer'],
        additionalProperties: false,
      });
    });

    it(`json_object asks for any JSON object${stream ? ' (streamed)' : ''}`, async () => {
      const s = await start(['{"anything":[1,2]}']);
      const r = await chatTurn(s, stream, { response_format: { type: 'json_object' } });
      expect(JSON.parse(r.content!)).toEqual({ anything: [1, 2] });
      expectForcedWithSchema(s, { type: 'object' });
    });
  }

  it('streamed and non-streamed answers are the same, retry included', async () => {
    const plain = await chatTurn(await start(['{"city":3}', ANSWER]), false);
    await stack!.close();
    const streamed = await chatTurn(await start(['{"city":3}', ANSWER]), true);
    expect(streamed).toEqual(plain);
  });

  it('a schema that is no JSON schema object is a 400 in the API shape, naming the field', async () => {
    const s = await start();
    const res = await fetch(`${s.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: chatHistory,
        tools: [weather],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'a string' } },
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; param: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.param).toBe('response_format.json_schema.schema');
    expect(s.sim.requests).toHaveLength(0);
  });

  it('without the fix the backend suppresses the call: the simulator reproduces vLLM#39929', async () => {
    const s = await start();
    // Straight to the backend, as toolproof used to send it: response_format beside tools.
    const res = await fetch(`${s.sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [chatHistory[0]],
        tools: [weather],
        response_format: chatFormat,
      }),
    });
    const body = (await res.json()) as {
      choices: Array<{ message: { tool_calls?: unknown[]; content: string } }>;
    };
    expect(body.choices[0]!.message.tool_calls ?? []).toEqual([]);
  });

  it('without tools, a schema answer goes to the backend as it is, and is checked and counted', async () => {
    const s = await start();
    for (const stream of [false, true]) {
      const body = { model: 'm', messages: [chatHistory[0]], response_format: chatFormat };
      if (stream)
        await collectStream(
          (await s.client.chat.completions.create({ ...body, stream: true } as never)) as never,
        );
      else await s.client.chat.completions.create(body as never);
    }
    for (const b of upstreamBodies(s)) expect(b.response_format).toEqual(chatFormat);
    const metrics = await (await fetch(`${s.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_schema_answers_total\{model="m",outcome="valid"\} 2/);
  });
});

describe('Responses: text.format json_schema beside tools', () => {
  const input = [
    { role: 'user' as const, content: 'Weather in Paris, as JSON?' },
    { type: 'function_call' as const, call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { type: 'function_call_output' as const, call_id: 'call_1', output: '{"celsius":21}' },
  ];
  const tools = [
    {
      type: 'function' as const,
      name: 'get_weather',
      parameters: weather.function.parameters,
      strict: false,
    },
  ];
  const text = { format: { type: 'json_schema' as const, name: 'weather', schema: SCHEMA } };
  for (const stream of [false, true]) {
    it(`the tool is called, then output_text is the schema's JSON${stream ? ' (streamed)' : ''}`, async () => {
      const s = await start();
      const call = async (inp: typeof input) => {
        if (!stream) return s.client.responses.create({ model: 'm', input: inp, tools, text } as never);
        const events = await s.client.responses.create({
          model: 'm',
          input: inp,
          tools,
          text,
          stream: true,
        } as never);
        let done: unknown;
        for await (const e of events as unknown as AsyncIterable<{ type: string; response?: unknown }>)
          if (e.type === 'response.completed') done = e.response;
        return done as {
          output_text?: string;
          output: Array<{ type: string; name?: string; content?: Array<{ text: string }> }>;
        };
      };
      const first = (await call([input[0]!] as never)) as { output: Array<{ type: string; name?: string }> };
      expect(first.output.filter((o) => o.type === 'function_call').map((o) => o.name)).toEqual([
        'get_weather',
      ]);
      const second = (await call(input)) as {
        output: Array<{ type: string; content?: Array<{ text: string }> }>;
      };
      const message = second.output.find((o) => o.type === 'message');
      expect(message?.content?.[0]?.text).toBe(ANSWER);
      expectForcedWithSchema(s);
    });
  }
});

describe('Messages: output_format / output_config.format beside tools', () => {
  const messages = [
    { role: 'user' as const, content: 'Weather in Paris, as JSON?' },
    {
      role: 'assistant' as const,
      content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
    },
    {
      role: 'user' as const,
      content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: '{"celsius":21}' }],
    },
  ];
  const tools = [
    { name: 'get_weather', description: 'weather', input_schema: weather.function.parameters as never },
  ];
  for (const [label, format] of [
    ['output_format', { output_format: { type: 'json_schema', schema: SCHEMA } }],
    ['output_config.format', { output_config: { format: { type: 'json_schema', schema: SCHEMA } } }],
  ] as const) {
    for (const stream of [false, true]) {
      it(`${label}: the tool is called, then a text block holds the JSON${stream ? ' (streamed)' : ''}`, async () => {
        const s = await start();
        const client = new Anthropic({ baseURL: s.origin, apiKey: 'k', maxRetries: 0 });
        const send = async (msgs: typeof messages) => {
          const body = { model: 'm', max_tokens: 300, messages: msgs, tools, ...format } as never;
          if (!stream) return client.messages.create(body);
          return client.messages.stream(body).finalMessage();
        };
        const first = (await send([messages[0]!] as never)) as Anthropic.Message;
        expect(
          first.content.filter((b) => b.type === 'tool_use').map((b) => (b as { name: string }).name),
        ).toEqual(['get_weather']);
        const second = (await send(messages)) as Anthropic.Message;
        const textBlocks = second.content.filter((b) => b.type === 'text') as Array<{ text: string }>;
        expect(textBlocks.map((b) => b.text).join('')).toBe(ANSWER);
        expectForcedWithSchema(s);
      });
    }
  }
});
