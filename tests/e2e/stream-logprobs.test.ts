/**
 * `logprobs` with tools on a streamed request, on llama-server: it refuses the three together
 * with its 400 "logprobs is not supported with tools + stream" (tools/server/server-common.cpp;
 * recorded in /work/shared/wire random-hermes__bad_logprobs_tools_stream), and the client sends
 * the same request shape every turn: every turn was that 400. Now the refusal is read and
 * remembered per upstream and model (policies/stream-logprobs): the turn goes again without
 * logprobs, and later turns go without them from the start. Non-streamed turns keep their
 * logprobs (llama-server takes them there). Three turns through the openai SDK, attempts counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

type Obj = Record<string, unknown>;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'llama-server',
      scenario: (ctx) =>
        ctx.messages.some((m) => m?.role === 'tool')
          ? { say: 'It is sunny in Paris.' }
          : { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    },
  });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

interface Turn {
  content: string;
  calls: Array<{ id: string; function: { name: string; arguments: string } }>;
  logprobs: boolean;
}

/** One turn, streamed or not: the assembled message and whether any logprobs came back. */
async function turn(messages: Obj[], stream: boolean, model = 'sim'): Promise<Turn> {
  const params = { model, messages, tools: [weatherTool], logprobs: true, top_logprobs: 2 } as never;
  if (!stream) {
    const c = (await stack.client.chat.completions.create(params)).choices[0]!;
    return {
      content: c.message.content ?? '',
      calls: (c.message.tool_calls ?? []) as Turn['calls'],
      logprobs: (c.logprobs?.content?.length ?? 0) > 0,
    };
  }
  const out: Turn = { content: '', calls: [], logprobs: false };
  const s = await stack.client.chat.completions.create({ ...(params as Obj), stream: true } as never);
  for await (const ch of s as unknown as AsyncIterable<{
    choices: Array<{ delta: { content?: string; tool_calls?: Turn['calls'] }; logprobs?: unknown }>;
  }>) {
    const c = ch.choices[0];
    out.content += c?.delta.content ?? '';
    for (const t of c?.delta.tool_calls ?? []) if (t.id) out.calls.push(t);
    if (c?.logprobs) out.logprobs = true;
  }
  return out;
}

/** Three turns: a call, its result, the answer; then a new question. Attempts per turn. */
async function session(stream: boolean, model?: string) {
  const messages: Obj[] = [];
  const attempts: number[] = [];
  const turns: Turn[] = [];
  for (let t = 0; t < 3; t++) {
    if (t !== 1) messages.push({ role: 'user', content: `Weather in Paris? ${stream} ${t}` });
    const before = upstream().length;
    const got = await turn(messages, stream, model);
    attempts.push(upstream().length - before);
    turns.push(got);
    messages.push({
      role: 'assistant',
      content: got.content || null,
      ...(got.calls.length > 0 ? { tool_calls: got.calls.map((c) => ({ ...c, type: 'function' })) } : {}),
    });
    for (const c of got.calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'Sunny, 21°C' });
  }
  return { attempts, turns };
}

describe('logprobs + tools + stream on llama-server', () => {
  it('streamed: three turns answered, refused once, then sent without logprobs; non-streamed keeps them', async () => {
    const streamed = await session(true);
    expect(streamed.attempts).toEqual([2, 1, 1]);
    expect(streamed.turns.map((t) => t.calls.length > 0 || t.content !== '')).toEqual([true, true, true]);
    expect(streamed.turns[0]!.calls[0]!.function.name).toBe('get_weather');
    expect(streamed.turns[1]!.content).toBe('It is sunny in Paris.');
    expect(streamed.turns.some((t) => t.logprobs)).toBe(false);
    for (const r of upstream().slice(-2)) expect((r.body as Obj).logprobs).toBeUndefined();

    const plain = await session(false);
    expect(plain.attempts).toEqual([1, 1, 1]);
    // The same answers; logprobs where the backend gives them.
    expect(plain.turns.map((t) => [t.content, t.calls.map((c) => c.function.name)])).toEqual(
      streamed.turns.map((t) => [t.content, t.calls.map((c) => c.function.name)]),
    );
    expect(plain.turns[1]!.logprobs).toBe(true);
    for (const r of upstream().slice(-3)) expect((r.body as Obj).logprobs).toBe(true);
  });

  it('a request that refuses for another reason is relayed, not sent again', async () => {
    const before = upstream().length;
    const err = await stack.client.chat.completions
      .create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
        top_logprobs: 2,
        stream: true,
      } as never)
      .then(
        () => null,
        (e: { status?: number; message?: string }) => e,
      );
    expect(err?.status).toBe(400);
    expect(upstream().length - before).toBe(1);
  });
});
