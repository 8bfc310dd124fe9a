/**
 * Streamed equals non-streamed on the three front doors for what landed recently, through the
 * real server on loopback and the real SDKs (tests/support/three-doors.ts): the assembled stream
 * and the whole answer are one value (content, calls, finish or stop reason, usage), or one error
 * (status and body), and the upstream is sent the same bytes either way (a cut turn, a note for
 * video, the corrective retry's feedback).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import {
  type ScriptedReply,
  type ScriptedStack,
  startScriptedStack,
  type Turn,
  turnChunks,
  turnCompletion,
} from '../server/scripted-upstream.js';
import { askDoor, type Door, DOORS, doorClients, type Outcome } from '../support/three-doors.js';

const say = { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) };
const SYSTEM = 'You are a coding agent.';
type Sent = { messages: Array<{ role: string; content: unknown }> };
type Msg = { role: 'user' | 'assistant'; content: unknown };

/** The same conversation on each door. */
function spelled(door: Door, turns: Msg[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (door === 'chat')
    return { model: 'sim', messages: [{ role: 'system', content: SYSTEM }, ...turns], ...extra };
  if (door === 'responses')
    return { model: 'sim', store: false, instructions: SYSTEM, input: turns, ...extra };
  return { model: 'sim', max_tokens: 256, system: SYSTEM, messages: turns, ...extra };
}

/** Both modes on `door`; the messages each sent upstream (the last request of each). */
async function both(
  clients: ReturnType<typeof doorClients>,
  sent: () => Array<{ body: Record<string, unknown> }>,
  door: Door,
  params: Record<string, unknown>,
) {
  const from = sent().length;
  const plain = await askDoor(clients, door, params, false);
  const mid = sent().length;
  const streamed = await askDoor(clients, door, params, true);
  const bodies = (a: number, b: number) =>
    sent()
      .slice(a, b)
      .map((r) => (r.body as Sent).messages);
  return { plain, streamed, upstream: [bodies(from, mid), bodies(mid, sent().length)] };
}

describe('over the window (vLLM, 16k, enforced)', () => {
  let stack: Stack;
  let clients: ReturnType<typeof doorClients>;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'vllm', maxModelLen: 16384, enforceWindow: true } as never,
    });
    clients = doorClients(stack.origin, say);
  });
  afterAll(() => stack.close());
  const sent = () => stack.sim.requests as Array<{ body: Record<string, unknown> }>;

  /** ~22k of the simulator's tokens: over the window by itself. */
  const paste = Array.from(
    { length: 1100 },
    (_, i) => `line ${i}: the log the user pasted, long enough to fill the window.`,
  ).join('\n');
  for (const door of DOORS)
    it(`${door}: a user turn cut to head and tail: the same answer and the same cut bytes`, async () => {
      const { plain, streamed, upstream } = await both(
        clients,
        sent,
        door,
        spelled(door, [{ role: 'user', content: paste }]),
      );
      expect(plain).toMatchObject({ ok: {} });
      expect(streamed).toEqual(plain);
      // The last request of each (the first one sent may have taught toolproof the window).
      expect(upstream[1]!.at(-1)).toEqual(upstream[0]!.at(-1));
      expect(JSON.stringify(upstream[0]!.at(-1))).toContain('toolproof left out');
    });

  /** Over the window only beside the earlier exchange: the backend's refusal, relayed. */
  const near = Array.from(
    { length: 970 },
    (_, i) => `line ${i}: the log the user pasted, nearly filling the window.`,
  ).join('\n');
  const earlier: Msg[] = [
    { role: 'user', content: 'Read the notes.' },
    { role: 'assistant', content: 'note '.repeat(3000) },
  ];
  for (const door of DOORS)
    it(`${door}: the over-window refusal is the door's context-length error, streamed or not`, async () => {
      const { plain, streamed } = await both(
        clients,
        sent,
        door,
        spelled(door, [...earlier, { role: 'user', content: near }]),
      );
      expect(plain).toMatchObject({ status: 400 });
      expect(JSON.stringify(plain)).toMatch(
        door === 'messages' ? /prompt is too long/ : /context_length_exceeded/,
      );
      expect(streamed).toEqual(plain);
    });
});

describe('video and audio degraded to notes (llama-server with an image mmproj: refused, then noted)', () => {
  let stack: Stack;
  let clients: ReturnType<typeof doorClients>;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server', vision: true } as never });
    clients = doorClients(stack.origin, say);
  });
  afterAll(() => stack.close());
  const MP4 = `data:video/mp4;base64,${Buffer.alloc(3000, 7).toString('base64')}`;
  const WAV = `data:audio/wav;base64,${Buffer.alloc(1500, 1).toString('base64')}`;
  for (const part of [
    { type: 'video_url', video_url: { url: MP4 } },
    { type: 'audio_url', audio_url: { url: WAV } },
  ])
    it(`chat: ${part.type}: the same answer and the same note upstream`, async () => {
      const { plain, streamed, upstream } = await both(
        clients,
        () => stack.sim.requests as never,
        'chat',
        spelled('chat', [{ role: 'user', content: [{ type: 'text', text: 'What is in this?' }, part] }]),
      );
      expect(plain).toMatchObject({ ok: { choices: [{ message: { content: 'ok' } }] } });
      expect(streamed).toEqual(plain);
      expect(upstream[1]!.at(-1)).toEqual(upstream[0]!.at(-1));
      expect(JSON.stringify(upstream[0]!.at(-1))).toContain('omitted');
    });
});

/** The scripted upstream's turns: one choice, several (n > 1), or a fault; counted apart by mode. */
type Planned = Turn | Turn[] | 'oom' | 'cut' | 'over-window';
function replyOf(planned: Planned, body: Record<string, unknown>): ScriptedReply {
  if (planned === 'oom') return { json: { error: { message: 'CUDA out of memory' } }, status: 500 };
  // vLLM's refusal of a prompt over the window (its wording: tests/fixtures/errors/wire.json), the
  // messages alone over it (a prompt that fits refused for its max_tokens goes again without them:
  // policies/output-budget).
  if (planned === 'over-window')
    return {
      json: {
        error: {
          message:
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8500 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      },
      status: 400,
    };
  // The connection closed after some of the answer (a backend restarted mid-answer).
  if (planned === 'cut')
    return body.stream === true
      ? {
          raw: `data: ${JSON.stringify(turnChunks({ content: 'Hello there, I am' }, 4)[1])}\n\n`,
          contentType: 'text/event-stream',
          destroyAfter: true,
        }
      : { raw: '{"id":"chatcmpl-scripted","choices":[{"index":0,"mess', destroyAfter: true };
  const choices = Array.isArray(planned) ? planned : [planned];
  if (body.stream !== true) {
    const whole = turnCompletion(choices[0]!) as { choices: Array<{ index: number }> };
    whole.choices = choices.map((c, index) => ({
      ...(turnCompletion(c) as { choices: Array<{ index: number }> }).choices[0]!,
      index,
    }));
    return { json: whole };
  }
  const chunks = choices.flatMap((c, index) =>
    turnChunks(c, 4).map((k) => ({ ...k, choices: k.choices.map((x) => ({ ...x, index })) })),
  );
  const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage
    ? [{ ...chunks[0]!, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }]
    : [];
  return { sse: [...chunks, ...usage], pieces: [9, 17, 5] };
}

describe('the attempt loop on a scripted upstream', () => {
  let stack: ScriptedStack;
  let clients: ReturnType<typeof doorClients>;
  let plan: Planned[] = [];
  const count = [0, 0];
  beforeAll(async () => {
    stack = await startScriptedStack((body) => {
      const k = body.stream === true ? 1 : 0;
      return replyOf(plan[Math.min(count[k]!++, plan.length - 1)]!, body);
    });
    const origin = stack.url.slice(0, -'/v1'.length);
    clients = doorClients(origin);
  });
  afterAll(() => stack.close());

  const citySchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const tools: Record<Door, unknown[]> = {
    chat: [{ type: 'function', function: { name: 'get_weather', parameters: citySchema } }],
    responses: [{ type: 'function', name: 'get_weather', parameters: citySchema, strict: false }],
    messages: [{ name: 'get_weather', input_schema: citySchema }],
  };
  const leak = (...cities: string[]) =>
    cities.map((c) => `<tool_call>{"name":"get_weather","arguments":{"city":"${c}"}}</tool_call>`).join('\n');

  async function run(door: Door, turns: Planned[], extra: Record<string, unknown> = {}) {
    plan = turns;
    count[0] = 0;
    count[1] = 0;
    const params = {
      ...spelled(door, [{ role: 'user', content: 'Weather?' }]),
      model: 'm',
      tools: tools[door],
      ...extra,
    };
    return both(clients, () => stack.upstream.requests, door, params);
  }

  it('chat, n=2, each choice a leaked call recovered', async () => {
    const { plain, streamed } = await run(
      'chat',
      [[{ content: leak('Paris') }, { content: `Sure. ${leak('Rome')}` }]],
      {
        n: 2,
      },
    );
    expect(plain).toMatchObject({
      ok: { choices: [{ finish_reason: 'tool_calls' }, { finish_reason: 'tool_calls' }] },
    });
    expect(streamed).toEqual(plain);
  });

  // Each choice's role chunk opens it: a retry left out choice 1's (it stripped the role of the
  // first choice in any chunk once choice 0's had gone out), and the SDK read no stream at all.
  it('chat, n=2, a broken call in each choice retried: each choice opened once, the same answer', async () => {
    const broken = { calls: [{ name: 'get_weather', arguments: '{"town":"Paris"}' }] };
    const { plain, streamed, upstream } = await run(
      'chat',
      [
        [broken, broken],
        [{ content: leak('Paris') }, { calls: [{ name: 'get_weather', arguments: '{"city":"Rome"}' }] }],
      ],
      { n: 2 },
    );
    expect(upstream[0]).toHaveLength(2);
    expect(plain).toMatchObject({
      ok: { choices: [{ finish_reason: 'tool_calls' }, { finish_reason: 'tool_calls' }] },
    });
    expect(streamed).toEqual(plain);
  });

  const noParallel: Record<Door, Record<string, unknown>> = {
    chat: { parallel_tool_calls: false },
    responses: { parallel_tool_calls: false },
    messages: { tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
  };
  for (const door of DOORS)
    it(`${door}: parallel calls off, two leaked calls recovered: one call, the same either way`, async () => {
      const { plain, streamed } = await run(door, [{ content: leak('Paris', 'Rome') }], noParallel[door]);
      expect(JSON.stringify(plain)).toContain('Paris');
      expect(JSON.stringify(plain)).not.toContain('Rome');
      expect(streamed).toEqual(plain);
    });

  for (const door of DOORS)
    it(`${door}: the corrective retry sends the same feedback and answers the same`, async () => {
      const { plain, streamed, upstream } = await run(door, [
        { calls: [{ name: 'get_weather', arguments: '{"town":"Paris"}' }] },
        { calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] },
      ]);
      expect(upstream[0]).toHaveLength(2);
      expect(upstream[1]).toEqual(upstream[0]);
      expect(streamed).toEqual(plain);
    });

  const answerSchema = {
    type: 'object',
    properties: { items: { type: 'array', items: { type: 'string' } } },
    required: ['items'],
    additionalProperties: false,
  };
  const format: Partial<Record<Door, Record<string, unknown>>> = {
    chat: { response_format: { type: 'json_schema', json_schema: { name: 'list', schema: answerSchema } } },
    responses: { text: { format: { type: 'json_schema', name: 'list', schema: answerSchema } } },
  };
  for (const door of ['chat', 'responses'] as const)
    it(`${door}: final_answer in the client's json_schema, a bad answer retried: the same answer`, async () => {
      const { plain, streamed, upstream } = await run(
        door,
        [
          { calls: [{ name: 'final_answer', arguments: '{"items":"a"}' }] },
          { calls: [{ name: 'final_answer', arguments: '{"items":["a","b"]}' }] },
        ],
        format[door],
      );
      expect(JSON.stringify(plain)).toContain('{\\"items\\":[\\"a\\",\\"b\\"]}');
      expect(upstream[0]).toHaveLength(2);
      expect(upstream[1]).toEqual(upstream[0]);
      expect(streamed).toEqual(plain);
    });

  /** An error's code as the door spells it (Messages: its error type), and its status. */
  const errorOf = (o: Outcome) => {
    const e = (o as { error: { code?: string; error?: { type: string } } }).error;
    return { status: (o as { status?: number }).status, code: e.code ?? e.error?.type };
  };

  const withTools = DOORS.map((door) => ({ door, extra: {} }));
  // Without tools the chat door relays the stream as it comes (server/chat/stream-relay.ts).
  for (const { door, extra, label } of [
    ...withTools.map((c) => ({ ...c, label: c.door })),
    { door: 'chat' as const, extra: { tools: undefined }, label: 'chat without tools (relayed)' },
  ]) {
    it(`${label}: the upstream's 500 on every attempt: the same error, status and body`, async () => {
      const { plain, streamed, upstream } = await run(door, ['oom'], extra);
      expect(upstream[1]!.length).toBe(upstream[0]!.length);
      expect(plain).toMatchObject({ status: 500 });
      expect(streamed).toEqual(plain);
    });

    it(`${label}: the upstream cut mid-answer on every attempt: the same attempts, the door's cut error`, async () => {
      const { plain, streamed, upstream } = await run(door, ['cut'], extra);
      expect(upstream[1]!.length).toBe(upstream[0]!.length);
      const code = door === 'messages' ? 'api_error' : 'TP_ERR_UPSTREAM_CUT_OFF';
      expect(errorOf(plain)).toEqual({ status: 502, code });
      // Streamed, the cut comes after the headers: the door's error event, with the same code.
      expect(errorOf(streamed)).toEqual({ status: undefined, code });
      expect(JSON.stringify(streamed)).toContain('closed the stream before it ended');
    });
  }

  // The first attempt's output is held (its call is broken: a corrective retry is possible), and
  // the backend refuses the retry. Nothing of the answer went out, so the streamed client gets
  // the refusal's own status and the door's error body, as the non-streamed one does (the SSE
  // headers went out when the first upstream stream opened: 200 and an error event).
  for (const door of DOORS)
    for (const [fault, status] of [
      ['over-window', 400],
      ['oom', 500],
    ] as const)
      it(`${door}: a held attempt whose retry is refused (${status}): the same status and body streamed as not`, async () => {
        const broken = { calls: [{ name: 'get_weather', arguments: '{"town":"Paris"}' }] };
        const { plain, streamed, upstream } = await run(door, [broken, fault]);
        expect(upstream[0]!.length).toBeGreaterThanOrEqual(2);
        expect(plain).toMatchObject({ status });
        expect(streamed).toEqual(plain);
        expect(upstream[1]).toEqual(upstream[0]);
      });

  /**
   * Any three attempts (leaks of one or two calls, prose, a broken call, final answers in and
   * out of the client's schema, a call cut by max_tokens, a 500, a cut, the over-window refusal)
   * on any door, with parallel calls off, a client json_schema, n=2: one outcome either way, and
   * the same requests upstream. Two differences are the stream's own: an error after the headers
   * (some of an earlier attempt's answer went out live) is the door's error event, the same code, no
   * status; a cut after output that went out live is not sent again.
   */
  const turn = fc.constantFrom<Planned>(
    { content: leak('Paris') },
    { content: `Sure. ${leak('Paris', 'Rome')}` },
    { content: 'Sunny.' },
    { calls: [{ name: 'get_weather', arguments: '{"town":"Paris"}' }] },
    {
      calls: [
        { name: 'get_weather', arguments: '{"city":"Paris"}' },
        { name: 'get_weather', arguments: '{"city":"Rome"}' },
      ],
    },
    { calls: [{ name: 'final_answer', arguments: '{"items":"a"}' }] },
    { calls: [{ name: 'final_answer', arguments: '{"items":["a","b"]}' }] },
    { calls: [{ name: 'final_answer', arguments: '{"answer":"It is sunny."}' }] },
    { calls: [{ name: 'get_weather', arguments: '{"city":"Par' }], finish: 'length' },
    'oom',
    'cut',
    'over-window',
  );
  const formats: Record<Door, Record<string, unknown>> = {
    ...(format as Record<'chat' | 'responses', Record<string, unknown>>),
    messages: { output_config: { format: { type: 'json_schema', schema: answerSchema } } },
  };
  const codeOf = (o: Outcome) => {
    const e = (o as { error: { code?: string; type?: string; error?: { type: string } } }).error;
    return e.code ?? e.error?.type ?? e.type;
  };
  /** Prose where the client asked for its schema: the SDKs' stream helpers parse it and throw. */
  const prose = (t: Planned) =>
    (Array.isArray(t) ? t : [t]).some(
      (x) => typeof x === 'object' && x.content !== undefined && !x.content.startsWith('<tool_call>'),
    );
  it('property: any three attempts on any door, parallel calls off, a schema, n=2', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...DOORS),
        fc.array(turn, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        async (door, turns, off, schema, two) => {
          fc.pre(!(schema && door !== 'chat' && turns.some(prose)));
          const n = two && door === 'chat';
          const extra = {
            ...(off ? noParallel[door] : {}),
            ...(schema ? formats[door] : {}),
            ...(n ? { n: 2 } : {}),
          };
          const planned = n ? turns.map((t) => (typeof t === 'string' ? t : [t as Turn, t as Turn])) : turns;
          const { plain, streamed, upstream } = await run(door, planned, extra);
          if ('status' in streamed && streamed.status === undefined && 'status' in plain) {
            expect(codeOf(streamed)).toBe(codeOf(plain));
            if (JSON.stringify(streamed).includes('closed the stream before it ended')) return;
          } else expect(streamed).toEqual(plain);
          expect(upstream[1]).toEqual(upstream[0]);
        },
      ),
      { numRuns: 24, seed: 1 },
    );
  });
});

/**
 * Holding the headers until the answer's first byte has a bound: a turn held longer than the
 * keep-alive interval (server.streamKeepAliveMs, 40 ms here) gets its status and headers at the
 * first quiet interval, while the backend still holds the turn open (each SDK's create() resolves
 * on the headers), and the answer follows on the same stream.
 */
describe('a long held turn still gets its headers within the keep-alive interval', () => {
  let stack: ScriptedStack;
  let clients: ReturnType<typeof doorClients>;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    stack = await startScriptedStack(
      () => {
        const hold = new Promise<void>((r) => {
          release = r;
        });
        const turn = { calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] };
        return { sse: turnChunks(turn, 4), pieces: [40, 40], hold };
      },
      { config: { streamKeepAliveMs: 40 } },
    );
    clients = doorClients(stack.url.slice(0, -'/v1'.length));
  });
  afterAll(() => stack.close());

  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const asks: Record<Door, Record<string, unknown>> = {
    chat: {
      model: 'm',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: schema } }],
    },
    responses: {
      model: 'm',
      store: false,
      input: 'Weather?',
      tools: [{ type: 'function', name: 'get_weather', parameters: schema, strict: false }],
    },
    messages: {
      model: 'm',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [{ name: 'get_weather', input_schema: schema }],
    },
  };

  for (const door of DOORS)
    it(`${door}: the headers while the backend holds the turn, then the answer`, async () => {
      const { openai, anthropic } = clients;
      const ask = { ...asks[door], stream: true };
      const events = (door === 'chat'
        ? await openai.chat.completions.create(ask as never)
        : door === 'responses'
          ? await openai.responses.create(ask as never)
          : await anthropic.messages.create(ask as never)) as unknown as AsyncIterable<unknown>;
      // The headers came (create resolved) while the backend still held the turn: without them
      // the turn is never released and the test times out.
      release();
      let text = '';
      for await (const e of events) text += JSON.stringify(e);
      expect(text).toContain('Paris');
    });
});
