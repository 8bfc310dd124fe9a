/**
 * The AI SDK (`ai`) with `@ai-sdk/openai`'s default provider (the Responses API) pointed at
 * toolproof in front of the simulator: tools with multi-step runs to a final text, streamed
 * and not; a leaked `<tool_call>` is executed as a real tool call; the forced final answer
 * streams as live text deltas.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, type ModelMessage, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import {
  expectCallThenText,
  expectLeakRunsTheTool,
  expectStreamedCallThenText,
  generateToolRun,
  streamToolRun,
  weatherTools,
} from '../support/ai-sdk-weather.js';

function setup(stack: Stack, scenario: string) {
  const openai = createOpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    headers: { 'x-sim-scenario': scenario },
  });
  // openai(id) is the default provider model: the Responses API.
  return { ...weatherTools(), model: openai('sim') };
}

/** A reasoning, then a text: the provider refers to both by id on the next turn. */
const THINK_THEN_SAY = JSON.stringify({ think: 'Two and two.', say: 'It is 4.' });

/** setup(), with the Responses request bodies the provider sent. */
function recording(stack: Stack, scenario: string) {
  const sent: Array<Record<string, unknown>> = [];
  const openai = createOpenAI({
    baseURL: stack.url,
    apiKey: 'unused',
    headers: { 'x-sim-scenario': scenario },
    fetch: (url, init) => {
      if (typeof init?.body === 'string') sent.push(JSON.parse(init.body) as Record<string, unknown>);
      return fetch(url, init);
    },
  });
  return { model: openai('sim'), sent };
}

const chatBodies = (s: Stack) =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.body as Record<string, unknown>);

describe('@ai-sdk/openai default provider through /v1/responses (forced tool use on)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it('generateText: tools, multi-step, to a final text', async () => {
    stack.sim.reset();
    const { seen, model, tools } = setup(stack, 'tools');
    const result = await generateToolRun({ model, tools, prompt: 'Weather in Paris?' });
    expectCallThenText(result, seen);
    // Step two sent the tool result back under the call id step one returned.
    const messages = chatBodies(stack)[1]!.messages as Array<Record<string, unknown>>;
    const assistant = messages.find((m) => m.role === 'assistant') as { tool_calls: Array<{ id: string }> };
    const toolMsg = messages.find((m) => m.role === 'tool')!;
    expect(toolMsg.tool_call_id).toBe(assistant.tool_calls[0]!.id);
    expect(assistant.tool_calls[0]!.id).toBe(result.steps[0]!.toolCalls[0]!.toolCallId);
  });

  it('streamText: multi-step; the forced final answer arrives as many live text deltas', async () => {
    const { seen, model, tools } = setup(stack, 'tools');
    expectStreamedCallThenText(await streamToolRun({ model, tools, prompt: 'Weather in Paris?' }), seen);
  });
  // The provider's default (store: true) sends earlier output back as item_reference items:
  // toolproof keeps the output items it returned, so they resolve to the items themselves.
  it.each([false, true])(
    'a later turn with the default store: true resolves item_reference to the items returned (stream: %s)',
    async (stream) => {
      const { model, sent } = recording(stack, THINK_THEN_SAY);
      const ask = (messages: ModelMessage[]) =>
        stream
          ? (async () => {
              const r = streamText({ model, messages, maxRetries: 0 });
              return { text: await r.text, response: await r.response };
            })()
          : generateText({ model, messages, maxRetries: 0 });
      const question: ModelMessage = { role: 'user', content: 'What is 2+2?' };
      const first = await ask([question]);
      const history: ModelMessage[] = [
        question,
        ...first.response.messages,
        { role: 'user', content: 'And 3+3?' },
      ];
      const second = await ask(history);
      expect(second.text.length).toBeGreaterThan(0);
      // The provider referred to the reasoning and the text by id ...
      const input = sent.at(-1)!.input as Array<{ type?: string; id?: string }>;
      const refs = input.filter((i) => i.type === 'item_reference');
      expect(refs.map((r) => r.id!.slice(0, 3)).sort()).toEqual(['msg', 'rs_']);
      // ... and the model got the turn as it was: its reasoning and its text.
      const messages = chatBodies(stack).at(-1)!.messages as Array<Record<string, unknown>>;
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(messages[1]!.content).toBe(first.text);
      expect(messages[1]!.reasoning_content).toBe('Two and two.');
    },
  );

  it('store: false sends whole items, and nothing of that answer is kept', async () => {
    const { model } = setup(stack, 'prose');
    const first = await generateText({
      model,
      prompt: 'What is 2+2?',
      providerOptions: { openai: { store: false } },
    });
    const id = (first.response.body as { output: Array<{ id: string }> }).output[0]!.id;
    const history: ModelMessage[] = [
      { role: 'user', content: 'What is 2+2?' },
      ...first.response.messages,
      { role: 'user', content: 'And 3+3?' },
    ];
    const second = await generateText({
      model,
      messages: history,
      providerOptions: { openai: { store: false } },
    });
    expect(second.text.length).toBeGreaterThan(0);
    // A reference to the unkept item (as one evicted since, or returned by another replica): a
    // note in its place, the same on every turn; before, a 400 on this turn and every later one.
    const input = [
      { role: 'user', content: 'What is 2+2?' },
      { type: 'item_reference', id },
      { role: 'user', content: 'And 3+3?' },
    ];
    const bodies: string[] = [];
    for (let turn = 0; turn < 2; turn++) {
      const res = await fetch(`${stack.url}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-scenario': 'prose' },
        body: JSON.stringify({ model: 'sim', input }),
      });
      expect(res.status).toBe(200);
      bodies.push(JSON.stringify(chatBodies(stack).at(-1)!.messages));
    }
    expect(bodies[1]).toBe(bodies[0]);
    const messages = JSON.parse(bodies[0]!) as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[1]!.content).toMatch(new RegExp(`earlier output item ${id} left out.*another worker`));
  });
});

describe('/v1/responses item_reference: scoped to the API key that got the item', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: 'key-a,key-b' } });
  });
  afterAll(() => stack.close());

  const post = (key: string, body: object) =>
    fetch(`${stack.url}/responses`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-sim-scenario': 'prose',
      },
      body: JSON.stringify({ model: 'sim', ...body }),
    });

  it("the key that got the item resolves it; another key's reference is a note, never the item", async () => {
    const first = (await (await post('key-a', { input: 'What is 2+2?' })).json()) as {
      store: boolean;
      output: Array<{ id: string }>;
    };
    expect(first.store).toBe(true);
    const input = [
      { role: 'user', content: 'What is 2+2?' },
      { type: 'item_reference', id: first.output[0]!.id },
      { role: 'user', content: 'And 3+3?' },
    ];
    expect((await post('key-a', { input })).status).toBe(200);
    const resolved = JSON.stringify(stack.sim.requests.at(-1)!.body);
    const other = await post('key-b', { input });
    expect(other.status).toBe(200);
    const sent = JSON.stringify(stack.sim.requests.at(-1)!.body);
    expect(sent).toContain('left out: toolproof no longer holds it');
    // what key-a's reference resolved to is not in key-b's prompt
    const answer = (JSON.parse(resolved) as { messages: Array<{ content: string }> }).messages[1]!.content;
    expect(sent).not.toContain(answer);
    // /metrics tells it as it was: one resolved, one missing, and the bytes the store holds
    const metrics = await (
      await fetch(`${stack.origin}/metrics`, { headers: { authorization: 'Bearer key-a' } })
    ).text();
    expect(metrics).toMatch(/^toolproof_responses_item_references_total\{outcome="resolved"\} 1$/m);
    expect(metrics).toMatch(/^toolproof_responses_item_references_total\{outcome="missing"\} 1$/m);
    const bytes = Number(/^toolproof_responses_store_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(bytes).toBeGreaterThan(first.output.map((o) => JSON.stringify(o)).join('').length);
  });
});

describe('/v1/responses item_reference: what references expand to is bounded by the body limit', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_BODY_LIMIT_BYTES: '2048' } });
  });
  afterAll(() => stack.close());

  it('a few bytes of references to one large item cannot make a prompt past the limit', async () => {
    const post = (body: object) =>
      fetch(`${stack.url}/responses`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-sim-scenario': JSON.stringify({ say: 'x'.repeat(600) }),
        },
        body: JSON.stringify({ model: 'sim', ...body }),
      });
    const first = (await (await post({ input: 'Hi' })).json()) as { output: Array<{ id: string }> };
    const ref = { type: 'item_reference', id: first.output[0]!.id };
    const user = { role: 'user', content: 'Hi' };
    expect((await post({ input: [user, ref, ref] })).status).toBe(200);
    const many = await post({ input: [user, ref, ref, ref, ref] });
    expect(many.status).toBe(413);
    expect(((await many.json()) as { error: { param: string } }).error.param).toBe('input');
  });
});

describe('/v1/responses item_reference with the store off (TOOLPROOF_RESPONSES_STORE_MB=0)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { TOOLPROOF_RESPONSES_STORE_MB: '0' } });
  });
  afterAll(() => stack.close());

  it('the default multi-turn gets a 400 that says the store is off and how to do without', async () => {
    const { model } = setup(stack, 'prose');
    const first = await generateText({ model, prompt: 'What is 2+2?' });
    expect((first.response.body as { store: boolean }).store).toBe(false);
    const history: ModelMessage[] = [
      { role: 'user', content: 'What is 2+2?' },
      ...first.response.messages,
      { role: 'user', content: 'And 3+3?' },
    ];
    await expect(generateText({ model, messages: history, maxRetries: 0 })).rejects.toThrow(
      /item_reference.*store is off.*store: false/,
    );
  });
});

describe('@ai-sdk/openai default provider through /v1/responses: leak recovery (forced tool use off)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  it.each([false, true])('a leaked <tool_call> is executed as a tool call (stream: %s)', (stream) =>
    expectLeakRunsTheTool(() => setup(stack, 'leak-hermes'), stream),
  );
});
