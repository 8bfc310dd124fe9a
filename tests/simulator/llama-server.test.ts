import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import {
  accumulate,
  chat,
  FINAL_ANSWER_TOOL,
  messageOf,
  scenarioHeader,
  sseEvents,
  WEATHER_TOOL,
} from './helpers.js';

const user = [{ role: 'user', content: 'What is the weather in Paris?' }];
const call = (id: string, args = '{"location": "Paris"}') => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }],
});
const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: '21C' });

let sim: Simulator;
beforeAll(async () => {
  sim = await createSimulator({ personality: 'llama-server', scenario: 'prose' });
});
afterAll(() => sim.close());

describe('llama-server personality', () => {
  it('returns content "" beside tool_calls with 32-char alphanumeric ids and no index', async () => {
    const r = await chat(sim, { messages: user, tools: [WEATHER_TOOL] }, scenarioHeader('tools'));
    const msg = messageOf(r);
    expect(msg.content).toBe('');
    const calls = msg.tool_calls as Array<Record<string, unknown>>;
    expect(calls[0]).toEqual({
      type: 'function',
      function: { name: 'get_weather', arguments: '{"location":"Paris","unit":"celsius"}' },
      id: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
    });
    expect(r.json.timings).toBeDefined();
    expect(r.headers.get('keep-alive')).toBe('timeout=5, max=100');
  });

  it('streams the first tool delta with id, type, name and the first argument fragment', async () => {
    const r = await chat(
      sim,
      { messages: user, tools: [WEATHER_TOOL], stream: true },
      scenarioHeader('tools'),
    );
    const events = sseEvents(r.text) as Array<
      { choices: Array<{ delta: Record<string, unknown> }> } | string
    >;
    expect((events[0] as { choices: Array<{ delta: unknown }> }).choices[0]?.delta).toEqual({
      role: 'assistant',
      content: null,
    });
    const first = (events[1] as { choices: Array<{ delta: { tool_calls: unknown[] } }> }).choices[0]?.delta
      .tool_calls[0];
    expect(first).toEqual({
      index: 0,
      id: expect.any(String),
      type: 'function',
      function: { name: 'get_weather', arguments: '{' },
    });
    const finish = events.at(-2) as unknown as {
      timings?: unknown;
      choices: Array<{ finish_reason: string }>;
    };
    expect(finish.choices[0]?.finish_reason).toBe('tool_calls');
    expect(finish.timings).toBeDefined();
  });

  it('honours "required" like guided decoding: prose becomes a final_answer call', async () => {
    const r = await chat(sim, {
      messages: user,
      tools: [WEATHER_TOOL, FINAL_ANSWER_TOOL],
      tool_choice: 'required',
    });
    const calls = messageOf(r).tool_calls as Array<{ function: { name: string; arguments: string } }>;
    expect(calls[0]?.function.name).toBe('final_answer');
    expect(JSON.parse(calls[0]?.function.arguments ?? '{}')).toEqual({ answer: expect.any(String) });
  });

  it('ignores a named tool_choice (treated as auto)', async () => {
    const r = await chat(sim, {
      messages: user,
      tools: [WEATHER_TOOL, FINAL_ANSWER_TOOL],
      tool_choice: { type: 'function', function: { name: 'final_answer' } },
    });
    expect(messageOf(r).tool_calls).toBeUndefined();
  });

  it('rejects "required" with its real 400 when rejectRequired is set, with Connection: close', async () => {
    const s = await createSimulator({ personality: 'llama-server', rejectRequired: true });
    try {
      const r = await chat(s, { messages: user, tools: [WEATHER_TOOL], tool_choice: 'required' });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({
        error: {
          code: 400,
          message: 'Failed to initialize samplers: std::exception',
          type: 'invalid_request_error',
        },
      });
      expect(r.headers.get('connection')).toBe('close');
    } finally {
      await s.close();
    }
  });

  it('really closes the socket after an error response', async () => {
    const closed = await new Promise<boolean>((resolve, reject) => {
      const req = request(`${sim.url}/chat/completions`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json' },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          req.socket?.once('close', () => resolve(true));
          setTimeout(() => resolve(req.socket?.destroyed ?? false), 500);
        });
      });
      req.on('error', reject);
      req.end('{"model":');
    });
    expect(closed).toBe(true);
  });

  it('with an audio projector: a format but wav or mp3, and a clip that is no WAV, MP3 or FLAC, are its 400s', async () => {
    const hearing = await createSimulator({ personality: 'llama-server', scenario: 'prose', audio: true });
    try {
      const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64');
      const ask = (data: string, format: string) =>
        chat(hearing, {
          messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data, format } }] }],
        });
      const ogg = await ask(b64(`OggS${'\x00'.repeat(20)}`), 'wav');
      expect([ogg.status, (ogg.json.error as { message: string }).message]).toEqual([
        400,
        'Failed to load image or audio file',
      ]);
      const flac = await ask(b64(`fLaC${'\x00'.repeat(20)}`), 'flac');
      expect([flac.status, (flac.json.error as { message: string }).message]).toEqual([
        400,
        "input_audio.format must be either 'wav' or 'mp3'",
      ]);
      expect((await ask(b64(`RIFF\x24\x00\x00\x00WAVEfmt ${'\x00'.repeat(20)}`), 'wav')).status).toBe(200);
    } finally {
      await hearing.close();
    }
  });

  it('rejects history arguments that are not JSON with a 500, as llama-server always does', async () => {
    const r = await chat(sim, {
      messages: [...user, call('abc', '{not json'), result('abc')],
      tools: [WEATHER_TOOL],
    });
    expect(r.status).toBe(500);
    expect((r.json.error as { message: string }).message).toMatch(
      /^Failed to parse tool call arguments as JSON: \[json\.exception/,
    );
  });

  describe('strictHistory', () => {
    let strict: Simulator;
    beforeAll(async () => {
      strict = await createSimulator({ personality: 'llama-server', strictHistory: true });
    });
    afterAll(() => strict.close());

    it('rejects a call not followed by its result', async () => {
      const r = await chat(strict, {
        messages: [...user, call('abc'), { role: 'user', content: 'and?' }],
        tools: [WEATHER_TOOL],
      });
      expect(r.status).toBe(400);
      expect((r.json.error as { message: string }).message).toContain('abc');
    });

    it('rejects a tool message whose id matches no call', async () => {
      const r = await chat(strict, {
        messages: [...user, call('abc'), result('abc'), result('zzz')],
        tools: [WEATHER_TOOL],
      });
      expect(r.status).toBe(400);
      expect((r.json.error as { message: string }).message).toContain("'zzz'");
    });

    it('accepts a proper round trip', async () => {
      const r = await chat(strict, {
        messages: [...user, call('abc'), result('abc')],
        tools: [WEATHER_TOOL],
      });
      expect(r.status).toBe(200);
    });
  });

  it('nineCharIds rejects ids that are not 9 alphanumerics with the template exception', async () => {
    const s = await createSimulator({ personality: 'llama-server', nineCharIds: true });
    try {
      const bad = await chat(s, {
        messages: [...user, call('call_abc123'), result('call_abc123')],
        tools: [WEATHER_TOOL],
      });
      expect(bad.status).toBe(400);
      expect((bad.json.error as { message: string }).message).toContain(
        'Tool call IDs should be alphanumeric strings with length 9!',
      );
      const good = await chat(s, {
        messages: [...user, call('abcDEF123'), result('abcDEF123')],
        tools: [WEATHER_TOOL],
      });
      expect(good.status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('requires the API key when configured, except on /health and /v1/models', async () => {
    const s = await createSimulator({ personality: 'llama-server', apiKey: 'k' });
    try {
      expect((await chat(s, { messages: user })).status).toBe(401);
      expect((await chat(s, { messages: user }, { authorization: 'Bearer k' })).status).toBe(200);
      expect((await chat(s, { messages: user }, { 'x-api-key': 'k' })).status).toBe(200);
      expect((await fetch(`${s.origin}/health`)).status).toBe(200);
      expect((await fetch(`${s.url}/models`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('ends a stream that fails mid-generation with an error event and no [DONE]', async () => {
    const r = await chat(
      sim,
      { messages: user, stream: true },
      scenarioHeader({
        raw: 'abc',
        error: {
          status: 500,
          message: 'The model produced output that does not match the expected peg-native format',
          midStream: true,
        },
      }),
    );
    expect(r.status).toBe(200);
    const events = sseEvents(r.text);
    expect(events.at(-1)).toEqual({
      error: {
        code: 500,
        message: 'The model produced output that does not match the expected peg-native format',
        type: 'server_error',
      },
    });
    expect(events).not.toContain('[DONE]');
    expect(accumulate(events).content).toBe('abc');
  });
});
