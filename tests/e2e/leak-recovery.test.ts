/**
 * End to end: the simulator plays a model whose calls leak into content (a mismatched
 * --tool-call-parser); through toolproof the openai client sees real tool_calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEAK_FORMATS } from '../../simulator/index.js';
import { collectStream, type Stack, startStack, weatherTool } from '../server/stack.js';

async function streamCalls(stack: Stack, scenario: string) {
  return collectStream(
    await stack.client.chat.completions.create(
      {
        model: 'sim',
        messages: [{ role: 'user', content: 'Weather in Paris for 3 days?' }],
        tools: [weatherTool],
        stream: true,
      },
      { headers: { 'x-sim-scenario': scenario } },
    ),
  );
}

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`leaked tool calls are recovered (${personality}, forced tool use off)`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality }, file: { defaults: { forceToolUse: false } } });
    });
    afterAll(() => stack.close());

    for (const format of LEAK_FORMATS) {
      it(`${format}: non-streaming`, async () => {
        const res = await stack.client.chat.completions.create(
          {
            model: 'sim',
            messages: [{ role: 'user', content: 'Weather in Paris for 3 days?' }],
            tools: [weatherTool],
          },
          { headers: { 'x-sim-scenario': `leak-${format}` } },
        );
        const msg = res.choices[0]!.message;
        // The backend really did leak: what it sent upstream had the call as text.
        expect(msg.tool_calls, `content was: ${msg.content}`).toHaveLength(1);
        const call = msg.tool_calls![0]!;
        if (call.type !== 'function') throw new Error('not a function call');
        expect(call.function.name).toBe('get_weather');
        expect(JSON.parse(call.function.arguments)).toMatchObject({ city: expect.any(String) });
        expect(call.id).toBeTruthy();
        expect(res.choices[0]!.finish_reason).toBe('tool_calls');
      });

      it(`${format}: streaming equals non-streaming`, async () => {
        const { calls, finish } = await streamCalls(stack, `leak-${format}`);
        expect(calls).toHaveLength(1);
        expect(calls[0]!.name).toBe('get_weather');
        expect(calls[0]!.id).toBeTruthy();
        expect(JSON.parse(calls[0]!.args)).toMatchObject({ city: expect.any(String) });
        expect(finish).toBe('tool_calls');
      });
    }

    it('prose mentioning JSON stays prose', async () => {
      const text =
        'You can call it like {"name": "get_weather", "arguments": {"city": "Paris"}} in your code.';
      const res = await stack.client.chat.completions.create(
        { model: 'sim', messages: [{ role: 'user', content: 'How do I call it?' }], tools: [weatherTool] },
        { headers: { 'x-sim-scenario': JSON.stringify([{ raw: text }]) } },
      );
      expect(res.choices[0]!.message.tool_calls ?? []).toHaveLength(0);
      expect(res.choices[0]!.message.content).toBe(text);
    });

    it('a call to an undeclared tool stays content, counted as rejected', async () => {
      const res = await stack.client.chat.completions.create(
        { model: 'sim', messages: [{ role: 'user', content: 'x' }], tools: [weatherTool] },
        {
          headers: {
            'x-sim-scenario': JSON.stringify([
              { leak: { format: 'hermes', calls: [{ name: 'rm_rf', arguments: { path: '/' } }] } },
            ]),
          },
        },
      );
      expect(res.choices[0]!.message.tool_calls ?? []).toHaveLength(0);
      expect(res.choices[0]!.message.content).toContain('rm_rf');
      const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
      expect(metrics).toMatch(
        /toolproof_leaks_total\{[^}]*format="hermes"[^}]*outcome="rejected"[^}]*\} [1-9]/,
      );
    });
  });
}

describe('leaks hidden in a llama-server 500 are recovered into a 200', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { defaults: { forceToolUse: false } },
    });
  });
  afterAll(() => stack.close());

  it('"Failed to parse input at pos N: <output>" becomes a tool call', async () => {
    const raw = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    const scenario = JSON.stringify([
      { error: { status: 500, message: `Failed to parse input at pos 0: ${raw}` } },
    ]);
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'x' }], tools: [weatherTool] },
      { headers: { 'x-sim-scenario': scenario } },
    );
    const call = res.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_leaks_total\{[^}]*source="error"[^}]*outcome="recovered"[^}]*\} 1/);
  });
});

describe('reasoning', () => {
  it('a template that opens <think> in the prompt: text up to a bare </think> is reasoning, the call after it is recovered', async () => {
    const stack = await startStack({ file: { defaults: { forceToolUse: false, startsInReasoning: true } } });
    const raw =
      'The user wants Paris weather.</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const scenario = JSON.stringify([{ raw }]);
    const res = await stack.client.chat.completions.create(
      { model: 'sim', messages: [{ role: 'user', content: 'x' }], tools: [weatherTool] },
      { headers: { 'x-sim-scenario': scenario } },
    );
    const msg = res.choices[0]!.message as (typeof res.choices)[0]['message'] & {
      reasoning_content?: string;
    };
    expect(msg.reasoning_content).toBe('The user wants Paris weather.');
    expect(msg.tool_calls).toHaveLength(1);
    expect(msg.content ?? null).toBeNull();
    await stack.close();
  });
});
