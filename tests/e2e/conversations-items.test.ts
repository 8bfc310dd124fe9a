/**
 * The Conversations API's retrieve, update and items routes, and GET /v1/responses/{id} with
 * `background: true`, through the real server on loopback in front of the simulator, with the
 * real `openai` SDK and the Agents SDK's OpenAIConversationsSession (a session's history kept in a
 * conversation: items.create after each run, items.list before the next, items.delete for
 * popItem). Before, each of these routes answered 404 and `background: true` was a 400: the
 * session's second run failed, and a background client never got an answer.
 */
import { OpenAIConversationsSession } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { weatherAgent } from './weather-agent.js';

const scenario = (s: string) => ({ headers: { 'x-sim-scenario': s } });
type Msg = { role: string; content?: unknown };
const upstreamMessages = (s: Stack): Msg[][] =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => (r.body as { messages: Msg[] }).messages);
const texts = (items: OpenAI.Conversations.ConversationItem[]) =>
  items.map((i) =>
    i.type === 'message'
      ? `${i.role}: ${(i.content as Array<{ text?: string }>).map((c) => c.text).join('')}`
      : i.type,
  );

describe('the Conversations API beside responses', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('retrieve, update, items.create, items.list (both orders, paged), items.retrieve and items.delete with the openai SDK', async () => {
    stack.sim.reset();
    const client = stack.client;
    const conv = await client.conversations.create({
      metadata: { topic: 'names' },
      items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }],
    });
    expect(await client.conversations.retrieve(conv.id)).toMatchObject({
      id: conv.id,
      object: 'conversation',
      created_at: conv.created_at,
      metadata: { topic: 'names' },
    });
    const updated = await client.conversations.update(conv.id, { metadata: { topic: 'ada' } });
    expect(updated.metadata).toEqual({ topic: 'ada' });

    await client.responses.create({ model: 'sim', conversation: conv.id, input: 'Hello?' }, scenario('echo'));
    const added = await client.conversations.items.create(conv.id, {
      items: [
        { type: 'message', role: 'user', content: 'Note one.' },
        { type: 'message', role: 'user', content: 'Note two.' },
      ],
    });
    expect(added.data).toHaveLength(2);
    expect(added.data[0]!.id).toMatch(/^msg_/);

    const asc: OpenAI.Conversations.ConversationItem[] = [];
    for await (const item of client.conversations.items.list(conv.id, { order: 'asc', limit: 2 }))
      asc.push(item);
    expect(texts(asc)).toEqual([
      'user: My name is Ada.',
      'user: Hello?',
      'assistant: Hello?',
      'user: Note one.',
      'user: Note two.',
    ]);
    // OpenAI's default order: newest first.
    const desc = await client.conversations.items.list(conv.id, { limit: 2 });
    expect(texts(desc.data)).toEqual(['user: Note two.', 'user: Note one.']);
    expect(desc.has_more).toBe(true);
    // The same ids on every listing.
    expect(desc.data.map((i) => i.id)).toEqual([asc[4]!.id, asc[3]!.id]);
    const one = await client.conversations.items.retrieve(asc[1]!.id!, { conversation_id: conv.id });
    expect(one).toMatchObject({ type: 'message', role: 'user' });

    // Items added between turns reach the model on the next turn; a deleted one does not.
    await client.conversations.items.delete(asc[3]!.id!, { conversation_id: conv.id });
    const r = await client.responses.create(
      { model: 'sim', conversation: conv.id, input: 'Last?' },
      scenario('echo'),
    );
    expect(r.output_text).toBe('Last?');
    expect(
      upstreamMessages(stack)
        .at(-1)!
        .map((m) => [m.role, m.content]),
    ).toEqual([
      ['user', 'My name is Ada.'],
      ['user', 'Hello?'],
      ['assistant', 'Hello?'],
      ['user', 'Note two.'],
      ['user', 'Last?'],
    ]);
    const after: OpenAI.Conversations.ConversationItem[] = [];
    for await (const item of client.conversations.items.list(conv.id, { order: 'asc' })) after.push(item);
    expect(texts(after)).toEqual([
      'user: My name is Ada.',
      'user: Hello?',
      'assistant: Hello?',
      'user: Note two.',
      'user: Last?',
      'assistant: Last?',
    ]);

    // A whole run's items at once (the Agents SDK's addItems): past OpenAI's 20, not refused.
    const many = Array.from({ length: 25 }, (_, k) => ({
      type: 'message' as const,
      role: 'user' as const,
      content: `n${k}`,
    }));
    expect((await client.conversations.items.create(conv.id, { items: many })).data).toHaveLength(25);

    await client.conversations.delete(conv.id);
    const err = await client.conversations.items.list(conv.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toMatch(/TOOLPROOF_RESPONSES_STORE_MB/);
  });

  it("the Agents SDK's OpenAIConversationsSession: two runs with a tool loop, then popItem", async () => {
    const { agent, runner, seen, client } = weatherAgent(stack, (city) => `Sunny in ${city}`);
    const session = new OpenAIConversationsSession({ client });
    await runner.run(agent, 'Hello.', { session });
    const result = await runner.run(agent, 'Weather in Paris?', { session });
    expect(seen).toEqual(['Paris']);
    expect(result.finalOutput).toBe('Sunny.');
    // The second run's requests held the first run's turn, read back from the conversation.
    const last = upstreamMessages(stack).at(-1)!;
    const text = (c: unknown) =>
      typeof c === 'string' ? c : (c as Array<{ text: string }>).map((p) => p.text).join('');
    expect(last.filter((m) => m.role === 'user').map((m) => text(m.content))).toEqual([
      'Hello.',
      'Weather in Paris?',
    ]);
    const items = await session.getItems();
    expect(items.map((i) => i.type)).toEqual([
      'message',
      'message',
      'message',
      'function_call',
      'function_call_result',
      'message',
    ]);
    const popped = await session.popItem();
    expect(popped).toMatchObject({ type: 'message', role: 'assistant' });
    expect(await session.getItems()).toHaveLength(5);
    await session.clearSession();
  });
});

describe('background: true and GET /v1/responses/{id}', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  for (const store of [true, false]) {
    it(`is answered in the foreground, and a poll returns the response (store: ${store})`, async () => {
      const client = stack.client;
      let res = await client.responses.create(
        { model: 'sim', input: 'Long task.', background: true, store },
        scenario('echo'),
      );
      // The guide's polling loop ends at once.
      while (res.status === 'queued' || res.status === 'in_progress')
        res = await client.responses.retrieve(res.id);
      expect(res.status).toBe('completed');
      expect(res.background).toBe(true);
      expect(res.output_text).toBe('Long task.');
      const polled = await client.responses.retrieve(res.id);
      expect(polled).toMatchObject({ id: res.id, status: 'completed', background: true, model: 'sim' });
      expect(polled.output_text).toBe('Long task.');
      expect(polled.output).toEqual(res.output);
      // Cancelling a finished response returns it as it is.
      expect((await client.responses.cancel(res.id)).status).toBe('completed');
      await client.responses.delete(res.id);
      await expect(client.responses.retrieve(res.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    });
  }

  it('streamed: the events as any stream, then a poll of the kept response', async () => {
    const events = stack.client.responses.stream(
      { model: 'sim', input: 'Streamed.', background: true },
      scenario('echo'),
    );
    for await (const _ of events) {
      // drained
    }
    const final = await events.finalResponse();
    const polled = await stack.client.responses.retrieve(final.id);
    expect(polled.output_text).toBe('Streamed.');
  });

  it('a response not kept (store: false, no background) is a 404 that says why', async () => {
    const res = await stack.client.responses.create(
      { model: 'sim', input: 'x', store: false },
      scenario('echo'),
    );
    const err = await stack.client.responses.retrieve(res.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toMatch(/store: false/);
  });
});
