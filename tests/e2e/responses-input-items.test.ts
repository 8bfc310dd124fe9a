/**
 * GET /v1/responses/{id}/input_items (the openai SDK's `responses.inputItems.list`): the items a
 * kept response was made from, paged as OpenAI pages them. Before, a 404 ("not served"), though
 * the store held every one of them. Through the real server and the SDK: a three-turn session
 * continued by previous_response_id, listed newest first (the default) and oldest first, a page
 * of two at a time followed to the end; another key's response and an unknown one are 404s.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

const say = (text: string) => ({ headers: { 'x-sim-scenario': JSON.stringify({ say: text }) } });

describe('responses.inputItems.list', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: 'key-a,key-b' }, apiKey: 'key-a' });
  });
  afterAll(() => stack.close());

  it('a response continued twice lists its whole input, paged, newest first by default', async () => {
    const c = stack.client;
    const one = await c.responses.create({ model: 'sim', input: 'first question' }, say('first answer'));
    const two = await c.responses.create(
      { model: 'sim', input: 'second question', previous_response_id: one.id },
      say('second answer'),
    );
    const three = await c.responses
      .stream(
        {
          model: 'sim',
          input: [{ role: 'user', content: [{ type: 'input_text', text: 'third question' }] }],
          previous_response_id: two.id,
        },
        say('third answer'),
      )
      .finalResponse();
    const textOf = (item: OpenAI.Responses.ResponseItem) =>
      item.type === 'message'
        ? (item.content as Array<{ text?: string }>).map((p) => p.text).join('')
        : item.type;
    const asc: string[] = [];
    const ids: string[] = [];
    for await (const item of c.responses.inputItems.list(three.id, { order: 'asc', limit: 2 })) {
      asc.push(textOf(item));
      ids.push(item.id);
    }
    expect(asc).toEqual([
      'first question',
      'first answer',
      'second question',
      'second answer',
      'third question',
    ]);
    // The answers are listed under the ids they were returned with.
    expect(ids[1]).toBe(one.output[0]!.id);
    expect(new Set(ids).size).toBe(5);
    const page = await c.responses.inputItems.list(three.id);
    expect(page.data.map(textOf)).toEqual([...asc].reverse());
    expect(page.has_more).toBe(false);
    const first = page.data.at(-1)!;
    expect(first).toMatchObject({ type: 'message', role: 'user', status: 'completed' });
    expect((first as { content: unknown }).content).toEqual([{ type: 'input_text', text: 'first question' }]);
    // The first response's own input.
    const own = await c.responses.inputItems.list(one.id);
    expect(own.data.map(textOf)).toEqual(['first question']);
  });

  it("a response made in a conversation lists the conversation's starting items first", async () => {
    // Before, they were left out: the listing began at the conversation's first turn.
    const c = stack.client;
    const conv = await c.conversations.create({
      items: [
        { type: 'message', role: 'user', content: 'starting note' },
        { type: 'message', role: 'user', content: 'starting question' },
      ],
    });
    await c.responses.create({ model: 'sim', input: 'turn one', conversation: conv.id }, say('answer one'));
    const two = await c.responses.create(
      { model: 'sim', input: 'turn two', conversation: conv.id },
      say('answer two'),
    );
    const texts: string[] = [];
    for await (const item of c.responses.inputItems.list(two.id, { order: 'asc', limit: 2 }))
      texts.push(
        item.type === 'message'
          ? (item.content as Array<{ text?: string }>).map((p) => p.text).join('')
          : item.type,
      );
    expect(texts).toEqual(['starting note', 'starting question', 'turn one', 'answer one', 'turn two']);
  });

  it('a starting item deleted from the conversation leaves the listing, kept between pages or not', async () => {
    // The listing is kept for the next page; a delete in its conversation must not be served stale.
    const c = stack.client;
    const conv = await c.conversations.create({
      items: [
        { type: 'message', role: 'user', content: 'note to drop' },
        { type: 'message', role: 'user', content: 'note to keep' },
      ],
    });
    const one = await c.responses.create(
      { model: 'sim', input: 'turn one', conversation: conv.id },
      say('answer'),
    );
    const textsOf = async () => {
      const out: string[] = [];
      for await (const item of c.responses.inputItems.list(one.id, { order: 'asc', limit: 2 }))
        if (item.type === 'message')
          out.push((item.content as Array<{ text?: string }>).map((p) => p.text).join(''));
      return out;
    };
    expect(await textsOf()).toEqual(['note to drop', 'note to keep', 'turn one']);
    const listed = await c.conversations.items.list(conv.id, { order: 'asc' });
    await c.conversations.items.delete(listed.data[0]!.id!, { conversation_id: conv.id });
    expect(await textsOf()).toEqual(['note to keep', 'turn one']);
  });

  it("another key's response and an unknown one are 404s", async () => {
    const one = await stack.client.responses.create({ model: 'sim', input: 'mine' }, say('ok'));
    const bob = new OpenAI({ baseURL: stack.url, apiKey: 'key-b', maxRetries: 0 });
    await expect(bob.responses.inputItems.list(one.id)).rejects.toMatchObject({ status: 404 });
    await expect(stack.client.responses.inputItems.list('resp_none')).rejects.toMatchObject({ status: 404 });
  });
});

describe('responses.retrieve with stream: true (a stream resumed)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('the kept response as its event stream: the SDK assembles it as kept; starting_after skips', async () => {
    const weather = {
      type: 'function' as const,
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      strict: false,
    };
    const script = {
      headers: { 'x-sim-scenario': JSON.stringify({ say: 'Sunny, 21 degrees.', think: 'Look it up.' }) },
    };
    for (const background of [false, true]) {
      const r = await stack.client.responses.create(
        { model: 'sim', input: 'Weather in Paris?', tools: [weather], background },
        script,
      );
      const events: Array<{ type: string; sequence_number: number }> = [];
      for await (const e of await stack.client.responses.retrieve(r.id, { stream: true })) events.push(e);
      expect(events[0]?.type).toBe('response.created');
      expect(events.at(-1)?.type).toBe('response.completed');
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      // responses.stream({response_id}) resumes and assembles it: the response as kept.
      const resumed = await stack.client.responses.stream({ response_id: r.id }).finalResponse();
      expect(resumed.output).toMatchObject(r.output);
      expect(resumed.status).toBe('completed');
      expect(resumed.output_text).toBe('Sunny, 21 degrees.');
      const tail: string[] = [];
      for await (const e of await stack.client.responses.retrieve(r.id, {
        stream: true,
        starting_after: events.length - 3,
      }))
        tail.push(e.type);
      expect(tail).toEqual(events.slice(-2).map((e) => e.type));
    }
  });

  it('a streamed response resumed after any event N: the live events after N, as numbered live', async () => {
    // Before, the rebuilt stream was numbered from 0 with each item's content in one delta, so
    // starting_after N taken from the live stream named another event: content skipped or repeated.
    const say = 'The weather in Paris is sunny and 21 degrees, with a light wind from the west.';
    const script = { headers: { 'x-sim-scenario': JSON.stringify({ say, think: 'Look it up first.' }) } };
    type Event = { type: string; sequence_number: number; delta?: string };
    const live: Event[] = [];
    for await (const e of await stack.client.responses.create(
      { model: 'sim', input: 'Weather in Paris?', stream: true },
      script,
    ))
      live.push(e as Event);
    const id = (live[0] as unknown as { response: { id: string } }).response.id;
    const deltas = live.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(3);
    const shown = (events: Event[]) =>
      events.filter((e) => e.type !== 'keepalive').map((e) => [e.sequence_number, e.type, e.delta ?? '']);
    for (const after of [
      -1,
      1,
      deltas[1]!.sequence_number,
      deltas.at(-2)!.sequence_number,
      live.length - 2,
    ]) {
      const resumed: Event[] = [];
      for await (const e of await stack.client.responses.retrieve(id, {
        stream: true,
        ...(after >= 0 ? { starting_after: after } : {}),
      }))
        resumed.push(e as Event);
      expect(shown(resumed), `starting_after ${after}`).toEqual(
        shown(live.filter((e) => e.sequence_number > after)),
      );
      // What the client had, then what it gets: the whole text once.
      const text = [...live.filter((e) => e.sequence_number <= after), ...resumed]
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      expect(text).toBe(say);
    }
    // The openai SDK's resume (it filters the replay by sequence_number itself).
    const after = deltas[2]!.sequence_number;
    const seen: Event[] = [];
    const stream = stack.client.responses.stream({ response_id: id, starting_after: after });
    for await (const e of stream) seen.push(e as Event);
    expect(shown(seen)).toEqual(shown(live.filter((e) => e.sequence_number > after)));
    expect((await stream.finalResponse()).output_text).toBe(say);
  });
});
