/**
 * The response-side policies composed by the pipeline's composition (normalize-tool-calls ->
 * leak-recovery -> force-tool-use -> client-constraints -> corrective-retry): streamed and
 * non-streamed results must agree, whatever the chunking and however broken the deltas, for
 * every choice when n > 1.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletion, ChatCompletionChunk, ToolCall } from '../../protocol/openai.js';
import {
  chunk,
  completion,
  ctxWith,
  finishOf,
  request,
  runNonStream,
  runStream,
  splitAt,
  streamedCalls,
  streamedContent,
  timeTool,
  weatherTool,
} from './helpers.js';

let original = request({ tools: [weatherTool, timeTool] });
const ctx = ctxWith();

// The production composition (policies/composition.ts, via helpers.ts), in the results' shapes.
function nonStream(res: ChatCompletion) {
  const r = runNonStream(res, original, ctx);
  return r.retry ? { retry: r.reason, effects: r.effects } : { response: r.response, effects: r.effects };
}

function stream(chunks: ChatCompletionChunk[]) {
  const r = runStream(chunks, original, ctx);
  return { out: r.out, retry: r.retry?.reason };
}

interface Layout {
  answer: string;
  realArgs: string;
  realFirst: boolean;
  allIndexZero: boolean;
  ids: boolean;
  cuts: number[];
}

function upstreamCalls(l: Layout): ToolCall[] {
  const fa: ToolCall = {
    id: 'fa1',
    type: 'function',
    function: { name: 'final_answer', arguments: JSON.stringify({ answer: l.answer }) },
  };
  const real: ToolCall = {
    id: 'rc1',
    type: 'function',
    function: { name: 'get_weather', arguments: l.realArgs },
  };
  return l.realFirst ? [real, fa] : [fa, real];
}

function upstreamChunks(l: Layout, choice = 0): ChatCompletionChunk[] {
  const chunks = [chunk({ role: 'assistant', content: null }, null, choice)];
  upstreamCalls(l).forEach((c, i) => {
    const index = l.allIndexZero ? 0 : i;
    const pieces = splitAt(c.function.arguments, l.cuts);
    pieces.forEach((piece, k) => {
      const td =
        k === 0
          ? {
              index,
              ...(l.ids ? { id: c.id } : {}),
              type: 'function' as const,
              function: { name: c.function.name, arguments: piece },
            }
          : { index, function: { arguments: piece } };
      chunks.push(chunk({ tool_calls: [td] }, null, choice));
    });
  });
  chunks.push(chunk({}, 'tool_calls', choice));
  return chunks;
}

describe('response policies composed', () => {
  it('property: streamed == non-streamed for final_answer beside a real call, any chunking, broken indices/ids', () => {
    fc.assert(
      fc.property(
        fc.record({
          answer: fc.string({ unit: 'grapheme' }),
          realArgs: fc.constantFrom('{"city":"Paris"}', '{"city":"Rome","days":2}'),
          realFirst: fc.boolean(),
          allIndexZero: fc.boolean(),
          ids: fc.boolean(),
          cuts: fc.array(fc.nat(60), { maxLength: 6 }),
        }),
        (l) => {
          const res = completion(
            { content: '', tool_calls: upstreamCalls(l).map((c) => (l.ids ? c : { ...c, id: '' })) },
            'tool_calls',
          );
          const ns = nonStream(res);
          expect(ns.retry).toBeUndefined();
          const s = stream(upstreamChunks(l));
          expect(s.retry).toBeUndefined();
          const choice = ns.response!.choices[0]!;
          expect(streamedContent(s.out)).toBe(choice.message.content);
          expect(choice.message.content).toBe(l.answer);
          const calls = streamedCalls(s.out);
          expect(calls.map((c) => [c.index, c.name, c.args])).toEqual([[0, 'get_weather', l.realArgs]]);
          expect(calls[0]?.id).toMatch(l.ids ? /^rc1$/ : /^call_/);
          expect(choice.message.tool_calls?.map((c) => [c.function.name, c.function.arguments])).toEqual([
            ['get_weather', l.realArgs],
          ]);
          expect(finishOf(s.out)).toBe(choice.finish_reason);
          expect(choice.finish_reason).toBe('tool_calls');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a bad real call beside final_answer asks for a retry in both modes', () => {
    const l: Layout = {
      answer: 'hi',
      realArgs: '{"days":"x"}',
      realFirst: false,
      allIndexZero: false,
      ids: true,
      cuts: [3],
    };
    expect(nonStream(completion({ content: '', tool_calls: upstreamCalls(l) }, 'tool_calls')).retry).toBe(
      'schema',
    );
    const s = stream(upstreamChunks(l));
    expect(s.retry).toBe('schema');
    // The answer already streamed live; the failed attempt is not finished for the client.
    expect(streamedContent(s.out)).toBe('hi');
    expect(finishOf(s.out)).toBeNull();
  });
});

describe('response policies composed, n > 1', () => {
  const layout = fc.record({
    answer: fc.string({ unit: 'grapheme' }),
    realArgs: fc.constantFrom('{"city":"Paris"}', '{"city":"Rome","days":2}'),
    realFirst: fc.boolean(),
    allIndexZero: fc.boolean(),
    ids: fc.constant(true),
    cuts: fc.array(fc.nat(60), { maxLength: 6 }),
  });

  it('property: every choice streamed == non-streamed, choices interleaved, with and without parallel_tool_calls', () => {
    fc.assert(
      fc.property(fc.array(layout, { minLength: 2, maxLength: 3 }), fc.boolean(), (layouts, single) => {
        original = request({
          tools: [weatherTool, timeTool],
          ...(single ? { parallel_tool_calls: false } : {}),
        });
        try {
          const res: ChatCompletion = {
            ...completion({ content: '' }),
            choices: layouts.map((l, index) => ({
              index,
              message: { role: 'assistant', content: '', tool_calls: upstreamCalls(l) },
              finish_reason: 'tool_calls',
            })),
          };
          const ns = nonStream(res);
          const perChoice = layouts.map((l, i) => upstreamChunks(l, i));
          const merged: ChatCompletionChunk[] = [];
          const longest = Math.max(...perChoice.map((c) => c.length));
          for (let k = 0; k < longest; k++) for (const c of perChoice) if (c[k]) merged.push(c[k]!);
          const s = stream(merged);
          expect(s.retry).toBe(ns.retry);
          layouts.forEach((l, i) => {
            const want = ns.response!.choices[i]!;
            const mine = s.out.map((c) => ({ ...c, choices: c.choices.filter((ch) => ch.index === i) }));
            const only = mine.map((c) => ({ ...c, choices: c.choices.map((ch) => ({ ...ch, index: 0 })) }));
            expect(streamedContent(only)).toBe(want.message.content);
            expect(want.message.content).toBe(l.answer);
            expect(streamedCalls(only).map((c) => [c.name, c.args])).toEqual(
              (want.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]),
            );
            expect(finishOf(only)).toBe(want.finish_reason);
          });
        } finally {
          original = request({ tools: [weatherTool, timeTool] });
        }
      }),
      { numRuns: 200 },
    );
  });
});
