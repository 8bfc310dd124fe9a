import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import {
  accumulate,
  chat,
  FINAL_ANSWER_TOOL,
  messageOf,
  post,
  scenarioHeader,
  sseEvents,
  WEATHER_TOOL,
} from './helpers.js';

const HEX_ID = /^chatcmpl-[0-9a-f]{32}$/;
const TOOL_ID = /^chatcmpl-tool-[0-9a-f]{32}$/;
const user = [{ role: 'user', content: 'What is the weather in Paris?' }];

let sim: Simulator;
beforeAll(async () => {
  sim = await createSimulator({ personality: 'vllm', scenario: 'tools' });
});
afterAll(() => sim.close());

describe('vLLM personality: chat completions', () => {
  it('returns structured calls with content null, chatcmpl-tool ids and the vLLM message fields', async () => {
    const r = await chat(sim, { messages: user, tools: [WEATHER_TOOL] });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('server')).toBe('uvicorn');
    expect(r.json.id).toMatch(HEX_ID);
    expect(r.json.object).toBe('chat.completion');
    const choice = (r.json.choices as Record<string, unknown>[])[0];
    expect(choice).toMatchObject({ finish_reason: 'tool_calls', stop_reason: null, logprobs: null });
    const msg = messageOf(r);
    expect(msg).toMatchObject({
      role: 'assistant',
      content: null,
      reasoning_content: null,
      function_call: null,
    });
    const calls = msg.tool_calls as Array<Record<string, unknown>>;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toEqual({
      id: expect.stringMatching(TOOL_ID),
      type: 'function',
      function: { name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' },
    });
    expect(r.json.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
    });
  });

  it('prose has tool_calls [] and content text', async () => {
    const r = await chat(sim, { messages: user }, scenarioHeader('prose'));
    expect(messageOf(r)).toMatchObject({ content: expect.any(String), tool_calls: [] });
    expect((r.json.choices as Record<string, unknown>[])[0]?.finish_reason).toBe('stop');
  });

  it('streams: role delta with content "", tool delta with id/type/name and empty arguments, usage chunk', async () => {
    const r = await chat(sim, {
      messages: user,
      tools: [WEATHER_TOOL],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(r.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = sseEvents(r.text);
    expect(events.at(-1)).toBe('[DONE]');
    const first = events[0] as { choices: Array<{ delta: unknown }> };
    expect(first.choices[0]?.delta).toEqual({ role: 'assistant', content: '' });
    const toolStart = events[1] as { choices: Array<{ delta: { tool_calls: unknown[] } }> };
    expect(toolStart.choices[0]?.delta.tool_calls[0]).toEqual({
      id: expect.stringMatching(TOOL_ID),
      type: 'function',
      index: 0,
      function: { name: 'get_weather', arguments: '' },
    });
    const usage = events.at(-2) as { choices: unknown[]; usage: unknown };
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ total_tokens: expect.any(Number) });
    const acc = accumulate(events);
    expect(acc.calls).toEqual([
      { id: expect.any(String), name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' },
    ]);
    expect(acc.finish).toBe('tool_calls');
  });

  it('sends no usage chunk without include_usage', async () => {
    const r = await chat(sim, { messages: user, stream: true }, scenarioHeader('prose'));
    expect(
      sseEvents(r.text).some(
        (e) => typeof e === 'object' && (e as { choices: unknown[] }).choices.length === 0,
      ),
    ).toBe(false);
  });

  it('puts reasoning in reasoning_content, streamed and not', async () => {
    const h = scenarioHeader({ think: 'Let me think.', say: 'Yes.' });
    expect(messageOf(await chat(sim, { messages: user }, h))).toMatchObject({
      reasoning_content: 'Let me think.',
      content: 'Yes.',
    });
    const acc = accumulate(sseEvents((await chat(sim, { messages: user, stream: true }, h)).text));
    expect(acc).toMatchObject({ reasoning: 'Let me think.', content: 'Yes.' });
  });

  it('uses the current vLLM `reasoning` field when configured', async () => {
    const current = await createSimulator({ personality: 'vllm', reasoningField: 'reasoning' });
    try {
      const h = scenarioHeader({ think: 'Hmm.', say: 'Yes.' });
      const msg = messageOf(await chat(current, { messages: user }, h));
      expect(msg.reasoning).toBe('Hmm.');
      expect(msg).not.toHaveProperty('reasoning_content');
      const events = sseEvents((await chat(current, { messages: user, stream: true }, h)).text);
      expect(events.some((e) => JSON.stringify(e).includes('"delta":{"reasoning":"Hmm"'))).toBe(true);
    } finally {
      await current.close();
    }
  });

  it('honours a named tool_choice', async () => {
    const r = await chat(
      sim,
      {
        messages: user,
        tools: [WEATHER_TOOL, FINAL_ANSWER_TOOL],
        tool_choice: { type: 'function', function: { name: 'final_answer' } },
      },
      scenarioHeader('prose'),
    );
    const calls = messageOf(r).tool_calls as Array<{ function: { name: string } }>;
    expect(calls.map((c) => c.function.name)).toEqual(['final_answer']);
  });

  it('returns logprobs when asked', async () => {
    const r = await chat(
      sim,
      { messages: user, logprobs: true, top_logprobs: 2 },
      scenarioHeader({ say: 'a b' }),
    );
    const lp = (r.json.choices as Array<{ logprobs: { content: Array<{ top_logprobs: unknown[] }> } }>)[0]
      ?.logprobs;
    expect(lp?.content).toHaveLength(2);
    expect(lp?.content[0]?.top_logprobs).toHaveLength(2);
  });
});

describe('vLLM personality: stop strings', () => {
  it('the text ends before the stop string, stop_reason names it, streamed and not', async () => {
    const say = scenarioHeader({ say: 'Run:\n```sh\nls\n```' });
    const r = await chat(sim, { messages: user, stop: ['```'] }, say);
    const choice = (r.json.choices as Record<string, unknown>[])[0];
    expect(choice).toMatchObject({ finish_reason: 'stop', stop_reason: '```' });
    expect(messageOf(r).content).toBe('Run:\n');
    const s = await chat(sim, { messages: user, stop: '```', stream: true }, say);
    const events = sseEvents(s.text);
    expect(accumulate(events)).toMatchObject({ content: 'Run:\n', finish: 'stop' });
    const last = events.filter((e) => e !== '[DONE]').at(-1) as { choices: Array<{ stop_reason: unknown }> };
    expect(last.choices[0]?.stop_reason).toBe('```');
  });
});

describe('vLLM personality: errors', () => {
  it('answers invalid JSON with 400 in the nested error shape, without closing the connection', async () => {
    const r = await post(sim, '/chat/completions', '{"model":');
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      error: {
        message:
          "1 validation error:\n  {'type': 'json_invalid', 'loc': ('body', 9), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': 'Expecting value'}}",
        type: 'Bad Request',
        param: 'body.9',
        code: 400,
      },
    });
    expect(r.headers.get('connection')).not.toBe('close');
  });

  it('a text-only model refuses an image or an audio part: it is no multimodal model', async () => {
    const text = await createSimulator({ personality: 'vllm', vision: false });
    try {
      for (const part of [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
      ]) {
        const r = await chat(text, {
          messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, part] }],
        });
        expect(r.status).toBe(400);
        expect((r.json.error as { message: string }).message).toBe(
          'simulated-model is not a multimodal model None',
        );
      }
    } finally {
      await text.close();
    }
  });

  it("a model that sees refuses an inline image PIL cannot identify (SVG, HEIC, a PDF), in PIL's words", async () => {
    const b64 = (bytes: string) => Buffer.from(bytes, 'latin1').toString('base64');
    for (const [type, bytes] of [
      ['svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"/>'],
      ['heic', '\x00\x00\x00\x18ftypheic\x00\x00\x00\x00'],
      ['png', '%PDF-1.7\n'],
    ]) {
      const url = `data:image/${type};base64,${b64(bytes!)}`;
      const r = await chat(sim, {
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
      });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'BadRequestError', code: 400 });
      expect((r.json.error as { message: string }).message).toMatch(
        /^cannot identify image file <_io\.BytesIO object at 0x[0-9a-f]{12}>$/,
      );
    }
    const webp = `data:image/webp;base64,${b64('RIFF\x1a\x00\x00\x00WEBPVP8L')}`; // PIL reads WebP
    const ok = await chat(sim, {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: webp } }] }],
    });
    expect(ok.status).toBe(200);
  });

  it("toolMessageImages false: an image in a tool message is the processor's 500, naming that image's index", async () => {
    const gemma = await createSimulator({ personality: 'vllm', toolMessageImages: false });
    const png = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    try {
      const r = await chat(gemma, {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'x' }, png] },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 't', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: [png] },
        ],
      });
      expect(r.status).toBe(500);
      expect(r.json.error).toEqual({
        message: "Failed to apply prompt replacement for mm_items['image'][1]",
        type: 'InternalServerError',
        param: null,
        code: 500,
      });
      const ok = await chat(gemma, { messages: [{ role: 'user', content: [png] }] });
      expect(ok.status).toBe(200);
    } finally {
      await gemma.close();
    }
  });

  it('reports pydantic validation errors with the field as param', async () => {
    const r = await post(sim, '/chat/completions', { model: 'simulated-model' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      message: expect.stringMatching(
        /^1 validation error:\n {2}\{'type': 'missing', 'loc': \('body', 'messages'\), 'msg': 'Field required'/,
      ),
      type: 'Bad Request',
      param: 'body.messages',
    });
  });

  it('guards /v1 with the API key, bearer only, and leaves /health open', async () => {
    const locked = await createSimulator({ personality: 'vllm', apiKey: 'k' });
    try {
      const denied = await chat(locked, { messages: user });
      expect(denied.status).toBe(401);
      expect(denied.json).toEqual({ error: 'Unauthorized' });
      expect((await chat(locked, { messages: user }, { 'x-api-key': 'k' })).status).toBe(401);
      expect((await chat(locked, { messages: user }, { authorization: 'Bearer k' })).status).toBe(200);
      expect((await fetch(`${locked.origin}/health`)).status).toBe(200);
    } finally {
      await locked.close();
    }
  });

  it('rejects "required" with the classic message when rejectRequired is set, in the legacy shape if asked', async () => {
    const old = await createSimulator({ personality: 'vllm', rejectRequired: true, errorShape: 'legacy' });
    try {
      const r = await chat(old, { messages: user, tools: [WEATHER_TOOL], tool_choice: 'required' });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({
        object: 'error',
        message: 'tool_choice must either be a named tool, "auto", or "none".',
        type: 'BadRequestError',
        param: null,
        code: 400,
      });
    } finally {
      await old.close();
    }
  });

  it('checks tool_choice against tools', async () => {
    const r = await chat(sim, { messages: user, tool_choice: 'required' });
    expect(r.json.error).toMatchObject({
      message: 'When using `tool_choice`, `tools` must be set.',
      code: 400,
    });
    const named = await chat(sim, {
      messages: user,
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'x' } },
    });
    expect(named.status).toBe(400);
  });

  it('rejects invalid-JSON history arguments with 400 and the json.loads message, as vLLM always does', async () => {
    const r = await chat(sim, {
      messages: [
        ...user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'get_weather', arguments: '{not json' } },
          ],
        },
        { role: 'tool', tool_call_id: 'a', content: '21C' },
      ],
      tools: [WEATHER_TOOL],
    });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({
      message: 'Expecting property name enclosed in double quotes: line 1 column 2 (char 1)',
      type: 'BadRequestError',
    });
  });

  it('strictHistory rejects a call without its result and an orphan result', async () => {
    const strict = await createSimulator({ personality: 'vllm', strictHistory: true });
    try {
      const call = {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      };
      const missing = await chat(strict, {
        messages: [...user, call, { role: 'user', content: 'and?' }],
        tools: [WEATHER_TOOL],
      });
      expect(missing.status).toBe(400);
      const orphan = await chat(strict, {
        messages: [...user, { role: 'tool', tool_call_id: 'zz', content: 'x' }],
        tools: [WEATHER_TOOL],
      });
      expect((orphan.json.error as { message: string }).message).toContain("'zz'");
      const fine = await chat(strict, {
        messages: [...user, call, { role: 'tool', tool_call_id: 'a', content: 'x' }],
        tools: [WEATHER_TOOL],
      });
      expect(fine.status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('answers an unknown model with 404 when checkModel is on', async () => {
    const strict = await createSimulator({ personality: 'vllm', checkModel: true, modelName: 'served' });
    try {
      const r = await chat(strict, { model: 'other', messages: user });
      expect(r.status).toBe(404);
      expect(r.json.error).toMatchObject({
        message: 'The model `other` does not exist.',
        type: 'NotFoundError',
        code: 404,
      });
    } finally {
      await strict.close();
    }
  });

  it('sends a mid-stream error event and still ends with [DONE]', async () => {
    const r = await chat(
      sim,
      { messages: user, stream: true },
      scenarioHeader({ raw: 'part', error: { status: 500, message: 'boom', midStream: true } }),
    );
    expect(r.status).toBe(200);
    const events = sseEvents(r.text);
    expect(events.at(-2)).toEqual({
      error: { message: 'boom', type: 'InternalServerError', param: null, code: 500 },
    });
    expect(events.at(-1)).toBe('[DONE]');
  });

  it('uses FastAPI answers for unknown routes and wrong methods', async () => {
    const unknown = await fetch(`${sim.url}/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: 'Not Found' });
    const wrong = await fetch(`${sim.url}/chat/completions`);
    expect(wrong.status).toBe(405);
  });
});

describe('vLLM personality: other endpoints', () => {
  it('serves /v1/models with owned_by vllm and max_model_len', async () => {
    const body = (await (await fetch(`${sim.url}/models`)).json()) as {
      object: string;
      data: Array<Record<string, unknown>>;
    };
    expect(body.object).toBe('list');
    expect(body.data[0]).toMatchObject({
      id: 'simulated-model',
      object: 'model',
      owned_by: 'vllm',
      max_model_len: 32768,
    });
  });

  it('serves /health with an empty 200', async () => {
    const r = await fetch(`${sim.origin}/health`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('');
  });

  it('serves vllm: metrics that count tokens', async () => {
    const text = await (await fetch(`${sim.origin}/metrics`)).text();
    for (const name of [
      'vllm:num_requests_running',
      'vllm:generation_tokens_total',
      'vllm:prompt_tokens_total',
      'vllm:time_to_first_token_seconds_bucket',
      'vllm:e2e_request_latency_seconds_count',
    ]) {
      expect(text).toContain(name);
    }
    expect(Number(/vllm:prompt_tokens_total\{[^}]*\} (\d+)/.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('answers /v1/completions, streamed and not', async () => {
    const r = await post(
      sim,
      '/completions',
      { model: 'simulated-model', prompt: 'Say hi' },
      scenarioHeader({ say: 'hi there' }),
    );
    expect(r.json).toMatchObject({
      object: 'text_completion',
      choices: [{ text: 'hi there', finish_reason: 'stop' }],
    });
    expect(r.json.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
    const s = await post(
      sim,
      '/completions',
      { prompt: 'x', stream: true },
      scenarioHeader({ say: 'hi there' }),
    );
    const text = sseEvents(s.text)
      .filter((e) => e !== '[DONE]')
      .map((e) => (e as { choices: Array<{ text: string }> }).choices[0]?.text ?? '')
      .join('');
    expect(text).toBe('hi there');
  });

  it('returns deterministic unit embeddings', async () => {
    const a = await post(sim, '/embeddings', { model: 'simulated-model', input: ['alpha', 'beta'] });
    const b = await post(sim, '/embeddings', { model: 'simulated-model', input: 'alpha' });
    const data = a.json.data as Array<{ embedding: number[]; index: number }>;
    expect(data).toHaveLength(2);
    expect((b.json.data as Array<{ embedding: number[] }>)[0]?.embedding).toEqual(data[0]?.embedding);
    expect(data[0]?.embedding).not.toEqual(data[1]?.embedding);
    const norm = Math.hypot(...(data[0]?.embedding ?? []));
    expect(norm).toBeCloseTo(1, 6);
  });
});
