/**
 * A tool result of megabytes in front of a backend whose window toolproof cannot read (a backend
 * that does not publish it, a gateway in between) and no `maxToolResultTokens`: the backend
 * refused the turn, and every later one, since the agent sends the result again each time. Now
 * the window its refusal names is learnt: the result is cut to fit as for a known window, the
 * request sent again once, and later turns go cut from the start with the same bytes. Through the
 * real server with the real `openai` SDK, against a fake upstream that refuses any prompt over its
 * window with llama-server's or vLLM's own 400 body, and publishes no window.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { windowFromRefusal } from '../../server/context-window.js';
import { startStack, type Stack } from '../server/stack.js';

const WINDOW = 8192;
/** ~2.2 MB of log lines: far past the window, however it is counted. */
const BIG = Array.from({ length: 36_000 }, (_, i) => `line ${i}: ${'x'.repeat(50)}`).join('\n');
const MARK = "to fit the model's context window";

type Kind = 'llama-server' | 'vllm';

/** The backend's 400 for a prompt of `prompt` tokens, as each writes it. */
function refusal(kind: Kind, prompt: number): unknown {
  return kind === 'llama-server'
    ? {
        error: {
          code: 400,
          message: 'the request exceeds the available context size, try increasing it',
          type: 'exceed_context_size_error',
          n_prompt_tokens: prompt,
          n_ctx: WINDOW,
        },
      }
    : {
        error: {
          message: `This model's maximum context length is ${WINDOW} tokens. However, your request has ${prompt} input tokens. Please reduce the length of the input messages.`,
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      };
}

interface Upstream {
  server: Server;
  url: string;
  /** Every chat request's body as it arrived, and the status it got. */
  seen: Array<{ raw: string; status: number }>;
}

/** A backend that counts 4 bytes a token, refuses past WINDOW, and publishes no window. */
async function fakeUpstream(kind: Kind): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!req.url?.endsWith('/chat/completions')) {
      if (req.url?.endsWith('/models'))
        return send(200, { object: 'list', data: [{ id: 'm', object: 'model' }] });
      return send(404, { error: { message: 'not found' } });
    }
    const prompt = Math.ceil(raw.length / 4);
    if (prompt > WINDOW) {
      seen.push({ raw, status: 400 });
      return send(400, refusal(kind, prompt));
    }
    seen.push({ raw, status: 200 });
    const body = JSON.parse(raw) as { stream?: boolean };
    const base = { id: 'c1', created: 1, model: 'm' };
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: unknown, finish: string | null) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: 'assistant', content: '' }, null));
      res.write(chunk({ content: 'The build passed.' }, null));
      res.write(chunk({}, 'stop'));
      res.end('data: [DONE]\n\n');
      return;
    }
    send(200, {
      ...base,
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'The build passed.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: prompt, completion_tokens: 4, total_tokens: prompt + 4 },
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { server, url: `http://127.0.0.1:${port}/v1`, seen };
}

const tools = [
  {
    type: 'function' as const,
    function: { name: 'run', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
  },
];

describe('the window learnt from the backend refusing a prompt over it', () => {
  let stack: Stack | undefined;
  let upstream: Upstream | undefined;
  afterEach(async () => {
    await stack?.close();
    await new Promise((r) => upstream?.server.close(r));
    stack = undefined;
    upstream = undefined;
  });

  async function start(kind: Kind): Promise<{ stack: Stack; upstream: Upstream }> {
    upstream = await fakeUpstream(kind);
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url }, served: ['m'] });
    expect(stack.app.toolproof.config.defaults.contextWindow).toBe(0); // not known
    return { stack, upstream };
  }

  for (const kind of ['llama-server', 'vllm'] as const)
    for (const stream of [false, true])
      it(`${kind}${stream ? ', streamed' : ''}: a ${(BIG.length / 1e6).toFixed(1)} MB tool result, the turn and the next two answered`, async () => {
        const { stack, upstream } = await start(kind);
        const history: Array<Record<string, unknown>> = [
          { role: 'user', content: 'Show me the build log.' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"cat build.log"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: BIG },
        ];
        const perTurn: number[] = [];
        for (let turn = 0; turn < 3; turn++) {
          const before = upstream.seen.length;
          const params = { model: 'm', messages: history as never, tools };
          let text = '';
          if (stream) {
            const s = await stack.client.chat.completions.create({ ...params, stream: true });
            for await (const c of s) text += c.choices[0]?.delta.content ?? '';
          } else text = (await stack.client.chat.completions.create(params)).choices[0]!.message.content!;
          expect(text).toBe('The build passed.');
          perTurn.push(upstream.seen.length - before);
          history.push(
            { role: 'assistant', content: `answer ${turn}` },
            { role: 'user', content: `next ${turn}` },
          );
        }
        // The first turn: refused whole, then sent cut; later turns go cut from the start.
        expect(perTurn).toEqual([2, 1, 1]);
        expect(upstream.seen[0]!.status).toBe(400);
        const sent = upstream.seen.filter((s) => s.status === 200).map((s) => s.raw);
        for (const raw of sent) {
          expect(raw).toContain(MARK);
          expect(raw.length).toBeLessThan(WINDOW * 4);
        }
        // What the upstream saw of the earlier turns is the same bytes, turn after turn.
        for (let i = 1; i < sent.length; i++) {
          const earlier = sent[i - 1]!;
          const messages = earlier.slice(0, earlier.indexOf(',"tools":') - 1); // up to the array's `]`
          expect(sent[i]!.startsWith(messages)).toBe(true);
        }
        const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
        expect(metrics).toMatch(
          /toolproof_upstream_refusals_total\{[^}]*decision="context-window-learnt"[^}]*\} 1/,
        );
      });

  for (const stream of [false, true])
    it(`responses${stream ? ', streamed' : ''}: a function_call_output of megabytes, the turn and the next answered`, async () => {
      const { stack, upstream } = await start('llama-server');
      const input: Array<Record<string, unknown>> = [
        { role: 'user', content: 'Show me the build log.' },
        { type: 'function_call', call_id: 'c1', name: 'run', arguments: '{"cmd":"cat build.log"}' },
        { type: 'function_call_output', call_id: 'c1', output: BIG },
      ];
      const perTurn: number[] = [];
      for (let turn = 0; turn < 2; turn++) {
        const before = upstream.seen.length;
        const params = {
          model: 'm',
          input: input as never,
          tools: [
            {
              type: 'function' as const,
              name: 'run',
              strict: false,
              parameters: { type: 'object', properties: {} },
            },
          ],
        };
        const res = stream
          ? await stack.client.responses.stream(params).finalResponse()
          : await stack.client.responses.create(params);
        expect(res.status).toBe('completed');
        expect(res.output_text).toBe('The build passed.');
        perTurn.push(upstream.seen.length - before);
        input.push(
          { role: 'assistant', content: `answer ${turn}` },
          { role: 'user', content: `next ${turn}` },
        );
      }
      expect(perTurn).toEqual([2, 1]);
      expect(upstream.seen.at(-1)!.raw).toContain(MARK);
    });

  it('count_tokens counts the prompt as it goes once the window is learnt: its tool result cut, under the window', async () => {
    const { stack, upstream } = await start('llama-server');
    const body = {
      model: 'm',
      max_tokens: 100,
      tools: [{ name: 'run', input_schema: { type: 'object', properties: { cmd: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'Show me the build log.' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'c1', name: 'run', input: { cmd: 'cat build.log' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: BIG }] },
      ],
    };
    const post = async (path: string) => {
      const res = await fetch(`${stack.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { input_tokens?: number };
    };
    // Before any refusal the window is unknown: the whole result counts, far over it (an agent
    // that compacts on the count compacts).
    expect((await post('/v1/messages/count_tokens')).input_tokens).toBeGreaterThan(WINDOW * 10);
    await post('/v1/messages'); // refused once, the window learnt, sent again cut
    expect(upstream.seen.map((s) => s.status)).toEqual([400, 200]);
    // Now the count is the turn's own prompt, cut to the learnt window, as with a configured one.
    const counted = (await post('/v1/messages/count_tokens')).input_tokens!;
    expect(counted).toBeLessThan(WINDOW);
    expect(counted).toBeGreaterThan(Math.ceil(upstream.seen[1]!.raw.length / 4) / 2);
  });

  it('a conversation over the window without any tool result: the backend’s error, once, no loop', async () => {
    const { stack, upstream } = await start('llama-server');
    // Turns that each fit: leaving out the older ones would (a turn over the window by itself is
    // cut, policies/truncation).
    const turns = Array.from({ length: 5 }, () => [
      { role: 'user' as const, content: 'y'.repeat(WINDOW) },
      { role: 'assistant' as const, content: 'ok' },
    ]).flat();
    const err = await stack.client.chat.completions
      .create({ model: 'm', messages: [...turns, { role: 'user', content: 'and?' }] })
      .catch((e: unknown) => e as { status: number; code: string; message: string });
    expect(err).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    expect((err as { message: string }).message).toContain('the conversation is still too long');
    expect(upstream.seen.length).toBe(1);
    // The window is still learnt: a later tool result goes cut from the start.
    const before = upstream.seen.length;
    await stack.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: BIG },
      ],
    });
    expect(upstream.seen.length - before).toBe(1);
    expect(upstream.seen.at(-1)!.raw).toContain(MARK);
  });

  it('many results, each cut to a quarter of the window and still over it together: the older ones cut further, answered', async () => {
    const { stack, upstream } = await start('vllm');
    const messages: Array<Record<string, unknown>> = [{ role: 'user', content: 'go' }];
    for (let i = 0; i < 6; i++)
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'run', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: `c${i}`, content: BIG.slice(0, 200_000) },
      );
    const res = await stack.client.chat.completions.create({ model: 'm', messages: messages as never });
    expect(res.choices[0]!.message.content).toBe('The build passed.');
    expect(upstream.seen.map((s) => s.status)).toEqual([400, 200]);
    const sent = JSON.parse(upstream.seen[1]!.raw) as { messages: Array<{ role: string; content: string }> };
    const results = sent.messages.filter((m) => m.role === 'tool').map((m) => m.content.length);
    // The newest results keep a quarter of the window (~6,000 characters), the oldest far less.
    expect(results[0]).toBeLessThan(1000);
    expect(results.at(-1)).toBeGreaterThan(5000);
  });

  it('cut, and still over the window (long user messages besides): the second refusal is relayed, no third attempt', async () => {
    const { stack, upstream } = await start('vllm');
    // Long user turns, each short of the window (one past it by itself would be cut).
    const messages: Array<Record<string, unknown>> = [
      ...Array.from({ length: 4 }, () => [
        { role: 'user', content: 'y '.repeat(5_000) },
        { role: 'assistant', content: 'ok' },
      ]).flat(),
      { role: 'user', content: 'go' },
    ];
    for (let i = 0; i < 6; i++)
      messages.push(
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'run', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: `c${i}`, content: BIG.slice(0, 200_000) },
      );
    const err = await stack.client.chat.completions
      .create({ model: 'm', messages: messages as never })
      .catch((e: unknown) => e as { status: number; code: string; message: string });
    expect(err).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    expect((err as { message: string }).message).toContain('the conversation is still too long');
    expect(upstream.seen.map((s) => s.status)).toEqual([400, 400]);
    expect(upstream.seen[1]!.raw).toContain(MARK);
  });
});

describe('windowFromRefusal: untrusted text, read defensively', () => {
  const llama = (n_ctx: unknown) => ({ error: { type: 'exceed_context_size_error', message: 'x', n_ctx } });
  it('reads both backends', () => {
    expect(windowFromRefusal(400, refusal('llama-server', 9000))).toBe(WINDOW);
    expect(windowFromRefusal(400, refusal('vllm', 9000))).toBe(WINDOW);
    expect(
      windowFromRefusal(400, {
        error: {
          message:
            'request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it',
        },
      }),
    ).toBe(4096);
  });
  it("llama-server's n_ctx is read beside any wording (a build whose message names no window)", () => {
    const body = {
      error: {
        code: 400,
        message: 'request (9000 tokens) exceeds context size, try increasing it',
        type: 'exceed_context_size_error',
        n_prompt_tokens: 9000,
        n_ctx: 6144,
      },
    };
    expect(windowFromRefusal(400, body)).toBe(6144);
  });
  it('only a 400 or 413, only a sane window', () => {
    expect(windowFromRefusal(500, refusal('vllm', 9000))).toBeUndefined();
    expect(windowFromRefusal(400, llama(1e12))).toBeUndefined();
    expect(windowFromRefusal(400, llama('99999999999999999999999'))).toBeUndefined();
    expect(windowFromRefusal(400, llama(12))).toBeUndefined();
    expect(windowFromRefusal(400, llama(-5))).toBeUndefined();
    expect(windowFromRefusal(400, llama(8.5))).toBeUndefined();
    expect(windowFromRefusal(400, { error: { message: 'Invalid tool_choice' } })).toBeUndefined();
  });
});
