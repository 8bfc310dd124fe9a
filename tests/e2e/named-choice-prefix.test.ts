/**
 * A turn whose client names a tool, between forced turns (docs/prefix.md, "A named tool_choice").
 * Forced turns declare final_answer after the client's tools; a named turn used to go without it,
 * so the tools (at the top of every chat template's prompt) changed twice, and the backend
 * prefilled the whole prompt again on the named turn and on the auto turn after it. Now the named
 * turn keeps final_answer declared with the same bytes, and the client's choice goes as sent:
 * vLLM enforces it by guided decoding. Where it is not enforced (llama-server reads the object
 * as "auto"), a final_answer call is judged 'wrong-tool' and re-asked, and once no retry is left
 * its answer is the content: never a call the client sees.
 *
 * Real HTTP: the simulator as vLLM (and as llama-server), the openai SDK (chat, Responses) and the
 * Anthropic SDK (Messages), streamed and not. Compared: each turn's upstream body, byte for byte.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnAction } from '../../simulator/index.js';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
type Door = 'chat' | 'responses' | 'messages';

const SYSTEM = `You are an agent. ${'Work carefully. '.repeat(40)}`;
const TOOLS = [
  {
    name: 'read_file',
    description: 'Read a file.',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'run',
    description: 'Run a command.',
    schema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
  },
];

/** What the client received on one turn: its text and the names of the calls. */
interface Got {
  text: string;
  calls: string[];
}

/** A client of one door: `turn` sends the conversation (naming `named` when set) and appends the answer. */
function clientOf(stack: Stack, door: Door) {
  if (door === 'chat') {
    const tools = TOOLS.map((t) => ({
      type: 'function' as const,
      function: { name: t.name, description: t.description, parameters: t.schema },
    }));
    const messages: Obj[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Fix the failing test.' },
    ];
    return async (stream: boolean, named?: string): Promise<Got> => {
      const params = {
        model: 'sim',
        messages: messages as never,
        tools,
        ...(named ? { tool_choice: { type: 'function' as const, function: { name: named } } } : {}),
      };
      const c = stream
        ? await stack.client.chat.completions.stream(params).finalChatCompletion()
        : await stack.client.chat.completions.create(params);
      const msg = c.choices[0]!.message;
      const calls = (msg.tool_calls ?? []).filter((x) => x.type === 'function');
      messages.push({
        role: 'assistant',
        content: msg.content,
        ...(calls.length ? { tool_calls: calls } : {}),
      });
      for (const x of calls) messages.push({ role: 'tool', tool_call_id: x.id, content: `ok ${x.id}` });
      if (calls.length === 0) messages.push({ role: 'user', content: 'Go on.' });
      return { text: msg.content ?? '', calls: calls.map((x) => x.function.name) };
    };
  }
  if (door === 'responses') {
    const tools = TOOLS.map((t) => ({
      type: 'function' as const,
      name: t.name,
      description: t.description,
      parameters: t.schema,
      strict: false,
    }));
    const input: Obj[] = [{ role: 'user', content: 'Fix the failing test.' }];
    return async (stream: boolean, named?: string): Promise<Got> => {
      const params = {
        model: 'sim',
        instructions: SYSTEM,
        input: input as never,
        tools,
        ...(named ? { tool_choice: { type: 'function' as const, name: named } } : {}),
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      const calls: string[] = [];
      for (const item of res.output) {
        const { parsed_arguments: _p, ...rest } = item as unknown as Obj;
        input.push(rest);
        if (item.type === 'function_call') {
          calls.push(item.name);
          input.push({ type: 'function_call_output', call_id: item.call_id, output: `ok ${item.call_id}` });
        }
      }
      if (calls.length === 0) input.push({ role: 'user', content: 'Go on.' });
      return { text: res.output_text, calls };
    };
  }
  const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 15_000 });
  const tools = TOOLS.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: t.schema as Anthropic.Tool.InputSchema,
  }));
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix the failing test.' }];
  return async (stream: boolean, named?: string): Promise<Got> => {
    const params = {
      model: 'sim',
      max_tokens: 4096,
      system: SYSTEM,
      messages,
      tools,
      ...(named ? { tool_choice: { type: 'tool' as const, name: named } } : {}),
    };
    const msg = stream
      ? await anthropic.messages.stream(params).finalMessage()
      : await anthropic.messages.create(params);
    messages.push({ role: 'assistant', content: msg.content as Anthropic.ContentBlockParam[] });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    messages.push({
      role: 'user',
      content:
        uses.length > 0
          ? uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: `ok ${u.id}` }))
          : 'Go on.',
    });
    const text = msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    return { text, calls: uses.map((u) => u.name) };
  };
}

/** Scripts the simulator: one action per upstream request, in order. */
function script(stack: Stack, plan: TurnAction[]): void {
  let next = 0;
  stack.sim.setScenario(() => plan[Math.min(next++, plan.length - 1)]!);
  stack.sim.reset();
}

const DOORS: Door[] = ['chat', 'responses', 'messages'];

describe('a named tool_choice turn between forced turns keeps the prompt (vLLM)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'vllm' } });
  });
  afterAll(() => stack.close());

  for (const door of DOORS)
    for (const stream of [false, true])
      it(`${door}, ${stream ? 'streamed' : 'not streamed'}: auto, named, auto extend byte for byte`, async () => {
        // The named turn: the model would rather answer; vLLM's guided decoding makes it call `run`.
        script(stack, [
          { call: [{ name: 'read_file', arguments: { path: 'a.ts' } }] },
          { say: 'I think the test is fine.' },
          { say: 'Fixed: the test passes.' },
        ]);
        const turn = clientOf(stack, door);
        const got = [await turn(stream), await turn(stream, 'run'), await turn(stream)];
        const sent = stack.sim.requests.map((r) => r.rawBody);
        expect(sent).toHaveLength(3);
        expect(got.map((g) => g.calls)).toEqual([['read_file'], ['run'], []]);
        expect(got[2]!.text).toBe('Fixed: the test passes.');
        for (const g of got) expect(JSON.stringify(g)).not.toContain('final_answer');
        for (let i = 1; i < sent.length; i++) expect(prefixBreak(sent[i - 1]!, sent[i]!)).toBeNull();
        // The named turn declares final_answer and sends the client's own choice.
        const body = JSON.parse(sent[1]!) as Obj;
        expect((body.tools as Obj[]).map((t) => (t.function as Obj).name)).toEqual([
          'read_file',
          'run',
          'final_answer',
        ]);
        expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'run' } });
        // The simulator's prefix cache: each later turn is served from cache up to the previous prompt.
        const cached = stack.sim.requests.map((r) => [r.cachedTokens, r.promptTokens]);
        for (let i = 1; i < cached.length; i++)
          expect(cached[i]![0]).toBeGreaterThan(0.9 * cached[i - 1]![1]!);
      });
});

describe('a backend that does not enforce the name (llama-server): final_answer never reaches the client', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
  });
  afterAll(() => stack.close());

  for (const door of DOORS)
    for (const stream of [false, true])
      it(`${door}, ${stream ? 'streamed' : 'not streamed'}: judged 'wrong-tool' and re-asked; the retry's call goes`, async () => {
        script(stack, [
          { call: [{ name: 'final_answer', arguments: { answer: 'No need to run it.' } }] },
          { call: [{ name: 'run', arguments: { cmd: 'npm test' } }] },
        ]);
        const got = await clientOf(stack, door)(stream, 'run');
        expect(got).toEqual({ text: '', calls: ['run'] });
        const sent = stack.sim.requests.map((r) => r.rawBody);
        expect(sent).toHaveLength(2);
        expect(sent[1]).toContain('this turn must call the tool `run`');
        expect(sent[1]).not.toContain('reply was not delivered');
      });
});

describe('a backend that does not enforce the name, no retry left', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server' }, file: { defaults: { maxRetries: 0 } } });
  });
  afterAll(() => stack.close());

  for (const door of DOORS)
    for (const stream of [false, true])
      it(`${door}, ${stream ? 'streamed' : 'not streamed'}: the answer is the content, never a final_answer call`, async () => {
        script(stack, [{ call: [{ name: 'final_answer', arguments: { answer: 'No need to run it.' } }] }]);
        const got = await clientOf(stack, door)(stream, 'run');
        expect(got).toEqual({ text: 'No need to run it.', calls: [] });
        expect(stack.sim.requests).toHaveLength(1);
      });
});

describe('a backend that does not enforce the name, an answer past maxHeldBytes', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { defaults: { maxHeldBytes: 2048 } },
    });
  });
  afterAll(() => stack.close());

  // 1,500 characters: over half of maxHeldBytes (not handed on as a call), under it (corrective-retry
  // still judges: the answer delivered is not re-asked, or the client had it twice); 5,000: past it.
  for (const words of [300, 1000])
    for (const door of DOORS)
      for (const stream of [false, true])
        it(`${door}, ${stream ? 'streamed' : 'not streamed'}, ${words * 5} characters: the answer is the content, once`, async () => {
          const answer = 'word '.repeat(words);
          script(stack, [{ call: [{ name: 'final_answer', arguments: { answer } }] }]);
          const got = await clientOf(stack, door)(stream, 'run');
          expect(got.calls).toEqual([]);
          expect(got.text).toBe(answer);
          expect(stack.sim.requests).toHaveLength(1);
        });
});
