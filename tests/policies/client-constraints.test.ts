/**
 * What the client asked for holds on what it receives (issue 9), streamed and not:
 * tool_choice "none" (no call reaches the client), parallel_tool_calls false (one call), a named
 * tool_choice and "required" (judged by corrective-retry: 'wrong-tool', 'prose-when-required').
 * Runs the whole response chain as the pipeline composes it (policies/composition.ts, via helpers.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ToolCall,
} from '../../protocol/openai.js';
import { clientConstraintsPolicy } from '../../policies/client-constraints/index.js';
import { POLICIES } from '../../policies/registry.js';

const RESPONSE_POLICIES = POLICIES.filter((p) => p.onResponse);
import {
  assemble,
  call,
  chunk,
  ctxWith,
  request,
  runNonStream,
  runStream,
  splitAt,
  timeTool,
  weatherTool,
} from './helpers.js';

interface TurnSpec {
  content: string;
  calls: ToolCall[];
  finish: string;
}

function completionOf(turns: TurnSpec[]): ChatCompletion {
  return {
    id: 'chatcmpl-c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: turns.map((t, index) => ({
      index,
      message: {
        role: 'assistant',
        content: t.content === '' && t.calls.length > 0 ? null : t.content,
        ...(t.calls.length > 0 ? { tool_calls: t.calls } : {}),
      },
      finish_reason: t.finish,
    })),
  };
}

/** The same turns as a stream: content and argument pieces split at `cuts`, choices interleaved. */
function chunksOf(turns: TurnSpec[], cuts: number[]): ChatCompletionChunk[] {
  const perChoice = turns.map((t, index) => {
    const out: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '' }, null, index)];
    for (const piece of splitAt(t.content, cuts)) if (piece) out.push(chunk({ content: piece }, null, index));
    t.calls.forEach((c, i) => {
      splitAt(c.function.arguments, cuts).forEach((piece, k) => {
        const td =
          k === 0
            ? {
                index: i,
                id: c.id,
                type: 'function' as const,
                function: { name: c.function.name, arguments: piece },
              }
            : { index: i, function: { arguments: piece } };
        out.push(chunk({ tool_calls: [td] }, null, index));
      });
    });
    out.push(chunk({}, t.finish, index));
    return out;
  });
  const merged: ChatCompletionChunk[] = [];
  const longest = Math.max(...perChoice.map((c) => c.length));
  for (let k = 0; k < longest; k++) for (const c of perChoice) if (c[k]) merged.push(c[k]!);
  return merged;
}

const tools = [weatherTool, timeTool];
const weather = call('c1', 'get_weather', '{"city":"Paris"}');
const time = call('c2', 'get_time', '{}');
const ctx = ctxWith();

function both(turns: TurnSpec[], original: ChatCompletionRequest, cuts: number[] = [3, 9], c = ctx) {
  return {
    ns: runNonStream(completionOf(turns), original, c),
    s: runStream(chunksOf(turns, cuts), original, c),
  };
}

const kinds = (effects: { policy: string; kind: string; count?: number }[], policy: string) =>
  effects
    .filter((e) => e.policy === policy)
    .reduce<Record<string, number>>((acc, e) => {
      acc[e.kind] = (acc[e.kind] ?? 0) + (e.count ?? 1);
      return acc;
    }, {});

describe('client-constraints: registry place', () => {
  it('runs after force-tool-use and before corrective-retry', () => {
    const names = RESPONSE_POLICIES.map((p) => p.name);
    expect(names.indexOf('client-constraints')).toBe(names.indexOf('force-tool-use') + 1);
    expect(names.indexOf('corrective-retry')).toBe(names.indexOf('client-constraints') + 1);
  });

  it('changes nothing when the client set no constraint', () => {
    const res = completionOf([{ content: '', calls: [weather, time], finish: 'tool_calls' }]);
    const d = clientConstraintsPolicy.onResponse!(
      res,
      ctx,
      undefined,
      request({ tools }),
      request({ tools }),
    );
    expect(d).toEqual({ action: 'continue', response: res, effects: [] });
  });
});

describe('tool_choice "none"', () => {
  const original = request({ tools, tool_choice: 'none' });

  it('a structured call the backend returned anyway becomes text, finish "stop", counted', () => {
    const { ns, s } = both([{ content: 'Checking.', calls: [weather], finish: 'tool_calls' }], original);
    const text = 'Checking.\n{"name":"get_weather","arguments":{"city":"Paris"}}';
    const choice = ns.response!.choices[0]!;
    expect(choice.message.tool_calls).toBeUndefined();
    expect(choice.message.content).toBe(text);
    expect(choice.finish_reason).toBe('stop');
    expect(kinds(ns.effects, 'client-constraints')).toEqual({ 'forbidden-call': 1 });
    expect(assemble(s.out)).toEqual({ content: text, finish: 'stop', calls: [] });
    expect(kinds(s.effects, 'client-constraints')).toEqual({ 'forbidden-call': 1 });
    expect(s.retry).toBeUndefined();
  });

  it('a leaked call stays text byte for byte, no retry, counted as suppressed', () => {
    const leak = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const { ns, s } = both([{ content: leak, calls: [], finish: 'stop' }], original, [4, 13, 30]);
    expect(ns.response!.choices[0]!.message.content).toBe(leak);
    expect(assemble(s.out)).toEqual({ content: leak, finish: 'stop', calls: [] });
    for (const r of [ns, s]) {
      const outcomes = r.effects
        .filter((e) => e.policy === 'leak-recovery')
        .map((e) => (e.detail as { outcome: string }).outcome);
      expect(outcomes).toEqual(['suppressed']);
    }
  });
});

describe('parallel_tool_calls false', () => {
  const original = request({ tools, parallel_tool_calls: false });

  // Regression (issue 9): two recovered calls reached the client.
  it('keeps the first call, drops and counts the others', () => {
    const { ns, s } = both(
      [{ content: '', calls: [weather, time, weather], finish: 'tool_calls' }],
      original,
    );
    expect(ns.response!.choices[0]!.message.tool_calls?.map((c) => c.function.name)).toEqual(['get_weather']);
    expect(kinds(ns.effects, 'client-constraints')).toEqual({ 'dropped-parallel-call': 2 });
    expect(assemble(s.out).calls).toEqual([{ id: 'c1', name: 'get_weather', args: '{"city":"Paris"}' }]);
    expect(kinds(s.effects, 'client-constraints')).toEqual({ 'dropped-parallel-call': 2 });
  });

  it('a bad dropped call triggers no retry: only what the client gets is judged', () => {
    const bad = call('c3', 'get_weather', '{"days":"x"}');
    const { ns, s } = both([{ content: '', calls: [time, bad], finish: 'tool_calls' }], original);
    expect(ns.retry).toBeUndefined();
    expect(s.retry).toBeUndefined();
  });
});

describe('named tool_choice', () => {
  const original = request({ tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } });

  // Regression (issue 9): llama-server ignores a named tool_choice; the other tool reached the client.
  it('a call to another tool is re-asked, with feedback naming the tool to call', () => {
    const { ns, s } = both([{ content: '', calls: [time], finish: 'tool_calls' }], original);
    expect(ns.reason).toBe('wrong-tool');
    expect(s.retry?.reason).toBe('wrong-tool');
    const feedback = ns.retry!.messages.at(-1)!;
    // The replayed call's id (9 alphanumerics in the retry: corrective-retry/retry-request.ts).
    const replayed = ns.retry!.messages.at(-2)!.tool_calls![0]!.id;
    expect(feedback).toMatchObject({ role: 'tool', tool_call_id: replayed });
    expect(String(feedback.content)).toContain('You must call the tool `get_weather`');
    expect(s.retry!.request.messages).toEqual(ns.retry!.messages);
    expect(assemble(s.out).calls).toEqual([]);
  });

  it('prose is re-asked too, and never streamed to the client', () => {
    const { ns, s } = both([{ content: 'It is sunny.', calls: [], finish: 'stop' }], original);
    expect(ns.reason).toBe('prose-when-required');
    expect(String(ns.retry!.messages.at(-1)!.content)).toContain(
      'You must call the tool `get_weather`; do not answer in prose.',
    );
    expect(s.retry?.reason).toBe('prose-when-required');
    expect(assemble(s.out).content).toBe('');
  });

  it('the named tool passes', () => {
    const { ns, s } = both([{ content: '', calls: [weather], finish: 'tool_calls' }], original);
    expect(ns.retry).toBeUndefined();
    expect(s.retry).toBeUndefined();
    expect(assemble(s.out).calls.map((c) => c.name)).toEqual(['get_weather']);
  });
});

describe('tool_choice "required"', () => {
  const original = request({ tools, tool_choice: 'required' });

  // Regression (issue 9): prose was returned as prose.
  it('prose is an invalid answer: re-asked with "do not answer in prose"', () => {
    const { ns, s } = both([{ content: 'It is sunny.', calls: [], finish: 'stop' }], original);
    expect(ns.reason).toBe('prose-when-required');
    const last = ns.retry!.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(String(last.content)).toContain(
      'You must call one of the tools (get_weather, get_time); do not answer in prose.',
    );
    expect(s.retry?.reason).toBe('prose-when-required');
    expect(s.retry!.request.messages).toEqual(ns.retry!.messages);
    expect(assemble(s.out)).toEqual({ content: '', finish: null, calls: [] });
  });

  it('retries spent: the prose is delivered as it is, counted returned-invalid, in both modes', () => {
    const spent = ctxWith({ retriesUsed: 1 });
    const { ns, s } = both([{ content: 'It is sunny.', calls: [], finish: 'stop' }], original, [4], spent);
    expect(ns.response!.choices[0]!.message.content).toBe('It is sunny.');
    expect(assemble(s.out)).toEqual({ content: 'It is sunny.', finish: 'stop', calls: [] });
    for (const r of [ns, s]) expect(r.effects.some((e) => e.kind === 'returned-invalid')).toBe(true);
  });

  it('any tool call satisfies it; content beside it is held, then delivered', () => {
    const { ns, s } = both([{ content: 'Let me check.', calls: [time], finish: 'tool_calls' }], original);
    expect(ns.retry).toBeUndefined();
    expect(assemble(s.out)).toEqual({
      content: 'Let me check.',
      finish: 'tool_calls',
      calls: [{ id: 'c2', name: 'get_time', args: '{}' }],
    });
  });
});

describe('final_answer without an answer', () => {
  it('corrective-retry re-asks with {"answer": ...} feedback, both modes', () => {
    const fa = call('fa', 'final_answer', '{"n": 1}');
    const { ns, s } = both([{ content: '', calls: [fa], finish: 'tool_calls' }], request({ tools }));
    expect(ns.reason).toBe('final-answer-args');
    expect(s.retry?.reason).toBe('final-answer-args');
    expect(String(ns.retry!.messages.at(-1)!.content)).toContain(
      'Call final_answer again with {"answer": "<your complete reply>"}',
    );
    expect(s.retry!.request.messages).toEqual(ns.retry!.messages);
  });
});

describe('property: streamed == non-streamed for every constraint, n > 1, any split', () => {
  const constraints: Array<Partial<ChatCompletionRequest>> = [
    {},
    { tool_choice: 'none' },
    { parallel_tool_calls: false },
    { tool_choice: 'required' },
    { tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    { tool_choice: 'none', parallel_tool_calls: false },
  ];
  const turn = fc.record({
    content: fc.constantFrom('', 'Sure.', 'Line\n', 'It is sunny.'),
    calls: fc.subarray([weather, time, call('c4', 'get_weather', '{"city":"Rome","days":2}')]),
    finish: fc.constantFrom('stop', 'tool_calls'),
  });

  it('holds', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...constraints),
        fc.array(turn, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(30), { maxLength: 4 }),
        fc.boolean(),
        (extra, turns, cuts, spent) => {
          const original = request({ tools, ...extra });
          const c = ctxWith({ retriesUsed: spent ? 1 : 0 });
          const { ns, s } = both(turns, original, cuts, c);
          expect(s.retry?.reason).toBe(ns.reason);
          if (ns.retry) return;
          turns.forEach((_, i) => {
            const want = ns.response!.choices[i]!;
            const got = assemble(s.out, i);
            expect(got.content).toBe(want.message.content ?? '');
            expect(got.finish).toBe(want.finish_reason);
            expect(got.calls.map((x) => [x.name, x.args])).toEqual(
              (want.message.tool_calls ?? []).map((x) => [x.function.name, x.function.arguments]),
            );
            if (extra.tool_choice === 'none') expect(got.calls).toEqual([]);
            if (extra.parallel_tool_calls === false) expect(got.calls.length).toBeLessThanOrEqual(1);
          });
          expect(kinds(s.effects, 'client-constraints')).toEqual(kinds(ns.effects, 'client-constraints'));
        },
      ),
      { numRuns: 300 },
    );
  });
});
