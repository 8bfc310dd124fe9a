/**
 * OpenAI's freeform custom tools on chat completions, with the openai client: declared upstream
 * as a function with one string argument `input` (as the Responses door does), the model's call
 * returned as `{type: "custom", custom: {name, input}}`, streamed and not; history and
 * tool_choice mapped back to the function.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

const PATCH = '*** Begin Patch\n*** End Patch';
const CALL = JSON.stringify({ call: [{ name: 'apply_patch', arguments: { input: PATCH } }] });

const customTool = {
  type: 'custom' as const,
  custom: { name: 'apply_patch', description: 'Apply a patch', format: { type: 'text' as const } },
};

describe('chat completions with custom tools', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ file: { defaults: { forceToolUse: false } } });
  });
  afterAll(() => stack.close());

  const lastUpstream = () => stack.sim.requests.at(-1)!.body as Record<string, unknown>;

  it('declared upstream as a function of one string; the call comes back as a custom call', async () => {
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'patch it' }], tools: [customTool] },
      { headers: { 'x-sim-scenario': CALL } },
    );
    const call = res.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageCustomToolCall;
    expect(call.type).toBe('custom');
    expect(call.custom).toEqual({ name: 'apply_patch', input: PATCH });
    const tools = lastUpstream().tools as Array<{
      type: string;
      function: { name: string; parameters: unknown };
    }>;
    expect(tools[0]!.type).toBe('function');
    expect(tools[0]!.function.name).toBe('apply_patch');
    expect(tools[0]!.function.parameters).toMatchObject({ properties: { input: { type: 'string' } } });
  });

  it('streamed: the custom call arrives whole, in the custom shape', async () => {
    const stream = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'patch it' }], tools: [customTool], stream: true },
      { headers: { 'x-sim-scenario': CALL } },
    );
    const calls: unknown[] = [];
    let finish: string | null = null;
    for await (const chunk of stream)
      for (const c of chunk.choices) {
        calls.push(...(c.delta.tool_calls ?? []));
        finish = c.finish_reason ?? finish;
      }
    expect(calls).toEqual([
      { index: 0, id: expect.any(String), type: 'custom', custom: { name: 'apply_patch', input: PATCH } },
    ]);
    expect(finish).toBe('tool_calls');
  });

  it('history and tool_choice: custom calls become the function calls the model made', async () => {
    await stack.client.chat.completions.create(
      {
        model: 'sim',
        messages: [
          { role: 'user', content: 'patch it' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'done' },
          { role: 'user', content: 'again' },
        ],
        tools: [customTool],
        tool_choice: { type: 'custom', custom: { name: 'apply_patch' } },
      },
      { headers: { 'x-sim-scenario': CALL } },
    );
    const sent = lastUpstream();
    const assistant = (sent.messages as Array<Record<string, unknown>>)[1]!;
    expect(assistant.tool_calls).toEqual([
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) },
      },
    ]);
    expect(sent.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
  });

  it('a function tool without `function` is still a 400 naming it', async () => {
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim',
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function' }],
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('tools.0.function');
  });
});

describe('chat completions with custom tools, forced tool use on (the default)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack.close());

  it.each([false, true])('the custom call comes back in the custom shape (stream: %s)', async (stream) => {
    const params = {
      model: 'sim',
      messages: [{ role: 'user' as const, content: 'patch it' }],
      tools: [customTool],
    };
    const opts = { headers: { 'x-sim-scenario': CALL } };
    const calls: unknown[] = [];
    if (stream) {
      for await (const chunk of await stack.client.chat.completions.create({ ...params, stream: true }, opts))
        for (const c of chunk.choices) calls.push(...(c.delta.tool_calls ?? []));
    } else
      calls.push(
        ...((await stack.client.chat.completions.create(params, opts)).choices[0]!.message.tool_calls ?? []),
      );
    expect(calls).toEqual([
      expect.objectContaining({ type: 'custom', custom: { name: 'apply_patch', input: PATCH } }),
    ]);
  });
});
