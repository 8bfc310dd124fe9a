/**
 * The upstream cuts a stream (a connection reset, a backend restarted mid-answer). Before any call
 * or answer text reached the client, toolproof sends the request again once, so the client gets
 * one whole answer: relayed, the cut reached chat clients as an error event inside a 200 stream,
 * which the AI SDK (opencode, Kilo) does not retry, and the run ended (agents suite:
 * backend-failures). After answer text went out, the cut is relayed as before: nothing is sent
 * twice. Through the real server against the simulator, with the real SDKs.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScenarioFn, TurnAction } from '../../simulator/index.js';
import { startStack, type Stack } from '../server/stack.js';

/** The next `cuts` requests die after `after` chunks; then the scripted action answers whole. */
let cuts = 0;
let after = 1;
let action: TurnAction = { call: [{ name: 'read', arguments: { path: 'a.txt' } }] };
const scenario: ScenarioFn = () => (cuts-- > 0 ? { ...action, dieAfterChunks: after } : action);

const chatTools = [
  {
    type: 'function' as const,
    function: { name: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  },
];

describe('a stream the upstream cuts', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'vllm', scenario } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  function arm(n: number, chunks: number, next: TurnAction): void {
    cuts = n;
    after = chunks;
    action = next;
    stack.sim.reset();
  }
  const call: TurnAction = { call: [{ name: 'read', arguments: { path: 'a.txt' } }] };

  it('chat: cut before anything went out, sent again: one whole tool call', async () => {
    arm(1, 1, call);
    const s = await stack.client.chat.completions.create({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'Read a.txt' }],
      tools: chatTools,
    });
    const roles: string[] = [];
    let args = '';
    for await (const c of s) {
      if (c.choices[0]?.delta.role) roles.push(c.choices[0].delta.role);
      args += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    }
    expect(JSON.parse(args)).toEqual({ path: 'a.txt' });
    expect(roles).toEqual(['assistant']);
    expect(stack.sim.requests).toHaveLength(2);
  });

  it('responses: the same, streamed', async () => {
    arm(1, 1, call);
    const res = await stack.client.responses
      .stream({
        model: 'm',
        input: 'Read a.txt',
        tools: [
          {
            type: 'function',
            name: 'read',
            strict: false,
            parameters: { type: 'object', properties: { path: { type: 'string' } } },
          },
        ],
      })
      .finalResponse();
    expect(res.status).toBe('completed');
    expect(res.output.filter((o) => o.type === 'function_call')).toHaveLength(1);
    expect(stack.sim.requests).toHaveLength(2);
  });

  it('messages: the same, streamed', async () => {
    arm(1, 1, call);
    const msg = await anthropic.messages
      .stream({
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Read a.txt' }],
        tools: [{ name: 'read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
      })
      .finalMessage();
    expect(msg.content.filter((b) => b.type === 'tool_use')).toHaveLength(1);
    expect(stack.sim.requests).toHaveLength(2);
  });

  it('sent again once only: a second cut reaches the client', async () => {
    arm(2, 1, call);
    // The call was held both times: nothing went out, so the cut is the route's 502, as the
    // non-streamed client gets it.
    await expect(
      stack.client.chat.completions.create({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'Read a.txt' }],
        tools: chatTools,
      }),
    ).rejects.toMatchObject({
      status: 502,
      message: expect.stringMatching(/closed the stream before it ended/),
    });
    expect(stack.sim.requests).toHaveLength(2);
  });

  it('a cut that reaches the client is named a cut (TP_ERR_UPSTREAM_CUT_OFF), not unreachable, on each door', async () => {
    // The backend was reached and began answering: "unreachable" would send its user looking at
    // the network. Each door's stream error in its own shape, and the inspector's attempt.
    const post = (path: string, body: unknown) =>
      fetch(`${stack.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: true, ...(body as object) }),
      }).then(async (r) => ({ status: r.status, text: await r.text() }));
    // Nothing of the answer went out before the second cut (the stream's headers wait for the
    // first byte the client must see): each door's own error body, with the cut's 502.
    arm(2, 1, call);
    const chat = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Read a.txt' }],
      tools: chatTools,
    });
    expect(chat.status).toBe(502);
    expect(JSON.parse(chat.text).error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    arm(2, 1, call);
    const responses = await post('/v1/responses', { input: 'Read a.txt' });
    expect(responses.status).toBe(502);
    expect(JSON.parse(responses.text).error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    arm(2, 1, call);
    const messages = await post('/v1/messages', {
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Read a.txt' }],
    });
    expect(messages.status).toBe(502);
    expect(JSON.parse(messages.text)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(messages.text).toMatch(/closed the stream before it ended/);
    for (const { text } of [chat, responses, messages]) expect(text).not.toMatch(/UNREACHABLE|unreachable/);
    const list = (await (await fetch(`${stack.origin}/inspect/api/requests`)).json()) as {
      requests: Array<{ id: string }>;
    };
    const one = (await (
      await fetch(`${stack.origin}/inspect/api/requests/${list.requests[0]!.id}`)
    ).json()) as {
      record: { upstreamAttempts: Array<{ error?: { code: string } }> };
    };
    expect(one.record.upstreamAttempts.map((a) => a.error?.code)).toEqual([
      'TP_ERR_UPSTREAM_CUT_OFF',
      'TP_ERR_UPSTREAM_CUT_OFF',
    ]);
  });

  it('a relayed /v1/completions stream the upstream cuts ends with the cut named (TP_ERR_UPSTREAM_CUT_OFF)', async () => {
    arm(1, 1, { say: 'Once upon a time there was a model that never finished its story.' });
    const res = await fetch(`${stack.origin}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, prompt: 'Once' }),
    });
    const text = await res.text();
    expect(text).toContain('"code":"TP_ERR_UPSTREAM_CUT_OFF"');
    expect(text).not.toMatch(/UNREACHABLE|unreachable/);
  });

  it('after answer text went out, the cut is relayed, never sent twice', async () => {
    arm(1, 8, {
      say: 'The file holds a long answer that streams out word by word to the client.',
      chunkDelayMs: 40, // each chunk its own read: the first words reach the client before the cut
    });
    const res = await fetch(`${stack.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, input: 'Say something long' }),
    });
    const events = (await res.text()).split('\n').filter((l) => l.startsWith('event: '));
    expect(events).toContain('event: response.output_text.delta');
    expect(events.at(-1)).toBe('event: response.failed');
    expect(stack.sim.requests).toHaveLength(1);
  });
});
