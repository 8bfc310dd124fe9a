/**
 * Chat completions' deprecated `functions` / `function_call` request fields (older clients and
 * frameworks still send them). The backends read `tools` only: before, the functions went
 * upstream untouched, the model was never told of them, a call it leaked stayed text and forced
 * tool use never happened. Now they go as the function tools they are and the answer comes back
 * in the shape the client asked in (`message.function_call`, finish "function_call", streamed
 * `delta.function_call`), streamed == non-streamed. Through the real server and the openai SDK
 * against the simulator as vLLM and llama-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

type Obj = Record<string, unknown>;

/** The stack's weather tool as a legacy function. */
const functions = [weatherTool.function];
const messages = [{ role: 'user' as const, content: 'Weather in Paris for 3 days?' }];

/** The streamed answer put together: content, the legacy call, the finish, and any tool_calls seen. */
async function streamed(stack: Stack, scenario: string, extra: Obj = {}) {
  const s = await stack.client.chat.completions.create(
    { model: 'sim', messages, functions, stream: true, ...extra } as never,
    { headers: { 'x-sim-scenario': scenario } },
  );
  let content = '';
  let name = '';
  let args = '';
  let finish: string | null = null;
  let toolCalls = 0;
  for await (const chunk of s as unknown as AsyncIterable<{
    choices: Array<{ delta: Obj; finish_reason: string | null }>;
  }>) {
    for (const c of chunk.choices) {
      content += (c.delta.content as string | undefined) ?? '';
      const fc = c.delta.function_call as { name?: string; arguments?: string } | undefined;
      name += fc?.name ?? '';
      args += fc?.arguments ?? '';
      if (c.delta.tool_calls) toolCalls++;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { content, name, args, finish, toolCalls };
}

for (const personality of ['vllm', 'llama-server'] as const)
  describe(`the deprecated functions field (${personality})`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality } });
    });
    afterAll(() => stack.close());
    const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

    it('goes upstream as tools, forced; a leaked call comes back as function_call, streamed or not', async () => {
      stack.sim.reset();
      const res = await stack.client.chat.completions.create({ model: 'sim', messages, functions } as never, {
        headers: { 'x-sim-scenario': 'leak-hermes' },
      });
      const sent = upstream()[0]!.body as Obj;
      expect(sent.functions).toBeUndefined();
      expect((sent.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toContain(
        'get_weather',
      );
      expect(sent.parallel_tool_calls).toBe(false);
      const choice = res.choices[0]!;
      const msg = choice.message as unknown as Obj;
      expect(msg.tool_calls).toBeUndefined();
      const fc = msg.function_call as { name: string; arguments: string };
      expect(fc.name).toBe('get_weather');
      expect(JSON.parse(fc.arguments)).toMatchObject({ city: expect.any(String) });
      expect(choice.finish_reason).toBe('function_call');

      const s = await streamed(stack, 'leak-hermes');
      expect(s.toolCalls).toBe(0);
      expect({ name: s.name, args: JSON.parse(s.args), finish: s.finish }).toEqual({
        name: fc.name,
        args: JSON.parse(fc.arguments),
        finish: 'function_call',
      });
    });

    it('a prose answer under forced tool use comes back as content, streamed or not', async () => {
      stack.sim.reset();
      const res = await stack.client.chat.completions.create({ model: 'sim', messages, functions } as never, {
        headers: { 'x-sim-scenario': 'prose' },
      });
      const sent = upstream()[0]!.body as Obj;
      // forced tool use: the synthetic final_answer beside the functions, tool use required
      expect(sent.tool_choice).toBe('required');
      expect(JSON.stringify(sent.tools)).toContain('final_answer');
      const msg = res.choices[0]!.message as unknown as Obj;
      expect(typeof msg.content).toBe('string');
      expect(msg.function_call ?? undefined).toBeUndefined();
      expect(res.choices[0]!.finish_reason).toBe('stop');
      const s = await streamed(stack, 'prose');
      expect({ content: s.content, finish: s.finish, name: s.name }).toEqual({
        content: msg.content,
        finish: 'stop',
        name: '',
      });
    });

    it('function_call naming a function is tool_choice naming it; "none" is "none"', async () => {
      stack.sim.reset();
      await stack.client.chat.completions.create(
        { model: 'sim', messages, functions, function_call: { name: 'get_weather' } } as never,
        { headers: { 'x-sim-scenario': 'prose' } },
      );
      expect((upstream()[0]!.body as Obj).tool_choice).toEqual({
        type: 'function',
        function: { name: 'get_weather' },
      });
      stack.sim.reset();
      const none = await stack.client.chat.completions.create(
        { model: 'sim', messages, functions, function_call: 'none' } as never,
        { headers: { 'x-sim-scenario': 'prose' } },
      );
      expect(none.choices[0]!.message.content).toBeTruthy();
      expect((none.choices[0]!.message as unknown as Obj).function_call ?? undefined).toBeUndefined();
    });

    it("the client's mistakes are a 400 naming the field", async () => {
      for (const [extra, param] of [
        [{ function_call: { name: 'nope' } }, 'function_call'],
        [{ tools: [{ type: 'function', function: { name: 'x' } }] }, 'functions'],
      ] as const) {
        const err = await stack.client.chat.completions
          .create({ model: 'sim', messages, functions, ...extra } as never)
          .catch((e: unknown) => e);
        expect((err as { status?: number }).status).toBe(400);
        expect((err as { param?: string }).param ?? JSON.stringify(err)).toContain(param);
      }
    });
  });
