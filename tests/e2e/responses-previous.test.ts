/**
 * previous_response_id on POST /v1/responses, through the real server on loopback in front of
 * the simulator: the `openai` SDK's `responses.create` and `responses.stream` naming the response
 * before, and the Agents SDK's `previousResponseId` (each request of its tool loop sends only the
 * new items). The upstream gets the whole conversation every turn, built from what toolproof
 * kept; a response it does not hold is a 400 in the OpenAI shape that says what to do. Before,
 * every such request was a 400 ("toolproof is stateless"): the session died on its first turn.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { weatherAgent } from './weather-agent.js';

type Res = OpenAI.Responses.Response;

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const scenario = (s: string) => ({ headers: { 'x-sim-scenario': s } });
type Msg = { role: string; content?: unknown; tool_calls?: Array<{ id: string }>; tool_call_id?: string };
const upstreamMessages = (s: Stack): Msg[][] =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => (r.body as { messages: Msg[] }).messages);

/** One turn, streamed with responses.stream or not: the final response. */
async function turn(
  stack: Stack,
  stream: boolean,
  params: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'stream'>,
  s: string,
): Promise<Res> {
  if (!stream) return stack.client.responses.create(params, scenario(s));
  const events = stack.client.responses.stream(params, scenario(s));
  for await (const _ of events) {
    // drained: the final response is the server's response.completed
  }
  return events.finalResponse();
}

describe('previous_response_id continues a kept response', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`a tool loop over three turns, each sending only its new items (stream: ${stream})`, async () => {
      stack.sim.reset();
      const first = await turn(
        stack,
        stream,
        { model: 'sim', input: 'Weather in Paris?', tools: [weather], instructions: 'Be brief.' },
        'tools',
      );
      const call = first.output.find((i) => i.type === 'function_call')!;
      expect(call).toBeDefined();
      expect(first.previous_response_id).toBeNull();

      const second = await turn(
        stack,
        stream,
        {
          model: 'sim',
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21°C' }],
          tools: [weather],
          instructions: 'Be brief.',
        },
        'tools',
      );
      expect(second.previous_response_id).toBe(first.id);
      // The simulator's `tools` script answers once the request holds an assistant turn: it
      // called again on every turn when the history was lost.
      expect(second.output.some((i) => i.type === 'function_call')).toBe(false);
      expect(second.output_text.length).toBeGreaterThan(0);

      const third = await turn(
        stack,
        stream,
        { model: 'sim', previous_response_id: second.id, input: 'And tomorrow?', tools: [weather] },
        'echo',
      );
      expect(third.output_text).toBe('And tomorrow?');

      const sent = upstreamMessages(stack);
      expect(sent).toHaveLength(3);
      expect(sent[1]!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
      expect(sent[1]![2]!.tool_calls?.[0]?.id).toBe(call.call_id);
      expect(sent[1]![3]).toMatchObject({ tool_call_id: call.call_id, content: 'Sunny, 21°C' });
      // Instructions are the request's own (as on OpenAI's API: not carried over).
      expect(sent[2]!.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
      expect(sent[2]![3]!.content).toBe(second.output_text);
      expect(sent[2]![4]!.content).toBe('And tomorrow?');
    });
  }

  it('a response answered with store: false is not kept, so it cannot be continued', async () => {
    const unkept = await stack.client.responses.create(
      { model: 'sim', input: 'hi', store: false },
      scenario('echo'),
    );
    expect((unkept as unknown as { store: boolean }).store).toBe(false);
    const err = await stack.client.responses
      .create({ model: 'sim', previous_response_id: unkept.id, input: 'again' }, scenario('echo'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('previous_response_id');
  });

  it('the Agents SDK with previousResponseId: a tool loop, then a second run that continues it', async () => {
    const { agent, runner, seen } = weatherAgent(stack, (city) => `Sunny and 21°C in ${city}`);
    const warm = await runner.run(agent, 'Hello.');
    expect(warm.lastResponseId).toMatch(/^resp_/);
    const result = await runner.run(agent, 'Weather in Paris?', { previousResponseId: warm.lastResponseId });
    expect(seen).toEqual(['Paris']);
    expect(result.finalOutput).toBe('Sunny.');
    const sent = upstreamMessages(stack);
    // The SDK sent only the new items each time; the upstream got the whole conversation.
    const last = sent.at(-1)!;
    expect(last.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Hello.',
      'Weather in Paris?',
    ]);
    expect(last.at(-1)).toMatchObject({ role: 'tool', content: 'Sunny and 21°C in Paris' });
  });
});

describe('previous_response_id this toolproof does not hold', () => {
  let stack: Stack;
  let other: Stack;
  beforeAll(async () => {
    [stack, other] = await Promise.all([startStack(), startStack()]);
  });
  afterAll(() => Promise.all([stack.close(), other.close()]));

  for (const stream of [false, true]) {
    it(`another process's response is a 400 naming previous_response_id that says what to do (stream: ${stream})`, async () => {
      // Kept by `other` (another worker, replica, or this one before a restart).
      const elsewhere = await other.client.responses.create({ model: 'sim', input: 'hi' }, scenario('echo'));
      const params = { model: 'sim', previous_response_id: elsewhere.id, input: 'again' };
      const err = await (stream
        ? turn(stack, true, params, 'echo')
        : stack.client.responses.create(params, scenario('echo'))
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      const e = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e.status).toBe(400);
      expect(e.param).toBe('previous_response_id');
      expect(e.message).toContain(elsewhere.id);
      expect(e.message).toMatch(/Send the whole conversation in `input`/);
      expect(e.message).toMatch(/one toolproof replica \(a sticky route\)/);
      // Nothing went upstream.
      expect(stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(0);
    });
  }

  it('counts continued and missing in toolproof_responses_previous_total', async () => {
    const first = await stack.client.responses.create({ model: 'sim', input: 'hi' }, scenario('echo'));
    await stack.client.responses.create(
      { model: 'sim', previous_response_id: first.id, input: 'again' },
      scenario('echo'),
    );
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/^toolproof_responses_previous_total\{outcome="continued"\} 1$/m);
    expect(metrics).toMatch(/^toolproof_responses_previous_total\{outcome="missing"\} 2$/m);
  });
});

describe('previous_response_id with the store off (TOOLPROOF_RESPONSES_STORE_MB=0)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_RESPONSES_STORE_MB: '0' } });
  });
  afterAll(() => stack.close());

  it('is a 400 that says nothing is kept', async () => {
    const first = await stack.client.responses.create({ model: 'sim', input: 'hi' }, scenario('echo'));
    expect((first as unknown as { store: boolean }).store).toBe(false);
    const err = await stack.client.responses
      .create({ model: 'sim', previous_response_id: first.id, input: 'again' }, scenario('echo'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toMatch(/TOOLPROOF_RESPONSES_STORE_MB=0/);
  });
});

describe('conversation (POST /v1/conversations) continues its own latest response', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`conversations.create, then three turns naming it (stream: ${stream})`, async () => {
      stack.sim.reset();
      const conv = await stack.client.conversations.create({
        items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }],
      });
      expect(conv.id).toMatch(/^conv_/);
      const texts: string[] = [];
      for (const input of ['What is my name?', 'Again?', 'Once more?']) {
        // store: false is the Agents SDK's default for some models: a conversation keeps its turns anyway.
        const r = await turn(
          stack,
          stream,
          { model: 'sim', conversation: conv.id, input, store: false },
          'echo',
        );
        texts.push(r.output_text);
      }
      expect(texts).toEqual(['What is my name?', 'Again?', 'Once more?']);
      const last = upstreamMessages(stack).at(-1)!;
      expect(last.map((m) => [m.role, m.content])).toEqual([
        ['user', 'My name is Ada.'],
        ['user', 'What is my name?'],
        ['assistant', 'What is my name?'],
        ['user', 'Again?'],
        ['assistant', 'Again?'],
        ['user', 'Once more?'],
      ]);
      // Deleted: a 400 naming it, as one never held.
      await stack.client.conversations.delete(conv.id);
      const err = await stack.client.responses
        .create({ model: 'sim', conversation: conv.id, input: 'hi' }, scenario('echo'))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('conversation');
      expect((err as Error).message).toMatch(/Send the whole conversation in `input` without conversation/);
    });
  }

  it('the Agents SDK with conversationId: two runs, a tool loop in the second', async () => {
    const { agent, runner, seen, client } = weatherAgent(stack, (city) => `Sunny in ${city}`);
    const { id } = await client.conversations.create({});
    await runner.run(agent, 'Hello.', { conversationId: id });
    const result = await runner.run(agent, 'Weather in Paris?', { conversationId: id });
    expect(seen).toEqual(['Paris']);
    expect(result.finalOutput).toBe('Sunny.');
    const last = upstreamMessages(stack).at(-1)!;
    expect(last.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'Hello.',
      'Weather in Paris?',
    ]);
  });

  it('conversation beside previous_response_id, or one never made, is a 400 naming conversation', async () => {
    const first = await stack.client.responses.create({ model: 'sim', input: 'hi' }, scenario('echo'));
    const { id } = await stack.client.conversations.create({});
    for (const params of [
      { model: 'sim', conversation: id, previous_response_id: first.id, input: 'x' },
      { model: 'sim', conversation: 'conv_never', input: 'x' },
    ]) {
      const err = await stack.client.responses.create(params, scenario('echo')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('conversation');
    }
    // One never made: a 404 in the OpenAI shape (the items routes: conversations-items.test.ts).
    await expect(stack.client.conversations.retrieve('conv_never')).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
  });
});
