import { describe, expect, it } from 'vitest';
import {
  toLegacyFunctionCall,
  toLegacyFunctionChunk,
  translateLegacyFunctions,
} from '../../protocol/chat-legacy-functions.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const fn = (k: number) => ({
  name: `f${k}`,
  parameters: { type: 'object', properties: { a: { type: 'string' } } },
});
const request = (n: number, extra: Record<string, unknown> = {}) =>
  ({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    functions: Array.from({ length: n }, (_, k) => fn(k)),
    ...extra,
  }) as unknown as ChatCompletionRequest;

describe('chat-legacy-functions', () => {
  it('functions are function tools, function_call the tool_choice, one call at a time', () => {
    const out = translateLegacyFunctions(request(2, { function_call: { name: 'f1' } }))!;
    expect(out.tools).toEqual([
      { type: 'function', function: fn(0) },
      { type: 'function', function: fn(1) },
    ]);
    expect(out.tool_choice).toEqual({ type: 'function', function: { name: 'f1' } });
    expect(out.parallel_tool_calls).toBe(false);
    expect('functions' in out || 'function_call' in out).toBe(false);
    expect(translateLegacyFunctions(request(1, { function_call: 'auto' }))!.tool_choice).toBe('auto');
    expect(translateLegacyFunctions(request(0))).toBeUndefined();
    expect(() => translateLegacyFunctions(request(1, { function_call: { name: 'f9' } }))).toThrow(
      /function_call/,
    );
    expect(() => translateLegacyFunctions(request(1, { function_call: 3 }))).toThrow(/function_call/);
  });

  it('the answer in the legacy shape: the call as function_call, streamed the same', () => {
    const c = {
      id: 'x',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f0', arguments: '{"a":"b"}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    } as unknown as ChatCompletion;
    const legacy = toLegacyFunctionCall(c).choices[0]!;
    expect(legacy.message).toEqual({
      role: 'assistant',
      content: null,
      function_call: { name: 'f0', arguments: '{"a":"b"}' },
    });
    expect(legacy.finish_reason).toBe('function_call');
    const chunk = (delta: object, finish: string | null = null) =>
      ({
        id: 'x',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'm',
        choices: [{ index: 0, delta, finish_reason: finish }],
      }) as ChatCompletionChunk;
    const deltas = [
      chunk({
        role: 'assistant',
        tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f0', arguments: '' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"b"}' } }] }),
      chunk({}, 'tool_calls'),
    ].map((k) => toLegacyFunctionChunk(k)!.choices[0]!);
    expect(
      deltas.map((d) => (d.delta.function_call as { arguments: string })?.arguments ?? '').join(''),
    ).toBe('{"a":"b"}');
    expect(deltas[0]!.delta).toEqual({ role: 'assistant', function_call: { name: 'f0', arguments: '' } });
    expect(deltas.at(-1)!.finish_reason).toBe('function_call');
  });

  it('costs about linear time and memory in the functions declared (x4 input, at most ~x4)', () => {
    // At most 16,384 functions (65,536 at 4x): at 65,536 (262,144) the translation read x6-9 alone
    // (262,144 tool objects, 12 MB kept) and x10.6 in a loaded full run of main; here x5-6. A
    // Set walked per function still reads x16.
    const s = measureScaling(request, (r) => translateLegacyFunctions(r), { from: 256, max: 1 << 14 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
