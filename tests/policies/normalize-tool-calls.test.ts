import { describe, expect, it } from 'vitest';
import type { ChatCompletion } from '../../protocol/openai.js';
import { normalizeToolCallsPolicy } from '../../policies/normalize-tool-calls/index.js';
import { call, chunk, completion, ctxWith, finishOf, request, runHook, streamedCalls } from './helpers.js';

const p = normalizeToolCallsPolicy;

function normalize(res: ChatCompletion) {
  const d = p.onResponse!(res, ctxWith(), undefined, request(), request());
  if (d.action !== 'continue') throw new Error('retry');
  return d;
}

function kinds(effects: { kind: string; count?: number }[]): Record<string, number> {
  return Object.fromEntries(effects.map((e) => [e.kind, e.count ?? 1]));
}

describe('normalize-tool-calls: response', () => {
  it('passes well-formed calls through untouched', () => {
    const res = completion(
      { content: '', tool_calls: [call('call_1', 'f', '{}'), call('abcdefghi', 'g', '{"a":1}')] },
      'tool_calls',
    );
    const d = normalize(res);
    expect(d.response).toBe(res);
    expect(d.effects).toEqual([]);
  });

  it('fixes missing and duplicate ids (derived, deterministic, unique call_ ids), missing type, object arguments', () => {
    const res = completion(
      {
        tool_calls: [
          { id: '', function: { name: 'f', arguments: { a: 1 } } } as never,
          call('dup', 'g', '{}'),
          call('dup', 'h', '{}'),
        ],
      },
      'tool_calls',
    );
    const d = normalize(res);
    const calls = d.response.choices[0]!.message.tool_calls!;
    expect(calls[0]?.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(calls[1]?.id).toBe('dup');
    expect(calls[2]?.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    expect(calls[0]).toMatchObject({ type: 'function', function: { name: 'f', arguments: '{"a":1}' } });
    expect(kinds(d.effects)).toEqual({
      'missing-id': 1,
      'duplicate-id': 1,
      'missing-type': 1,
      'object-arguments': 1,
    });
    expect(normalize(res).response).toEqual(d.response); // deterministic
  });

  it('tool_calls finish on arguments cut off by max_tokens becomes length', () => {
    const d = normalize(completion({ tool_calls: [call('c', 'f', '{"query": "long te')] }, 'tool_calls'));
    expect(d.response.choices[0]?.finish_reason).toBe('length');
    expect(kinds(d.effects)).toEqual({ 'truncated-arguments': 1 });
  });

  it('malformed but complete arguments are not called truncated (corrective retry handles them)', () => {
    const d = normalize(completion({ tool_calls: [call('c', 'f', "{'a': 1}")] }, 'tool_calls'));
    expect(d.response.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('finish_reason tool_calls without any call becomes stop', () => {
    const d = normalize(completion({ content: 'prose', tool_calls: [] }, 'tool_calls'));
    expect(d.response.choices[0]?.finish_reason).toBe('stop');
    expect(d.response.choices[0]?.message.tool_calls).toBeUndefined();
  });
});

describe('normalize-tool-calls: stream', () => {
  const hook = () => p.createStreamHook!(ctxWith(), undefined, request(), request());

  it('splits calls that all arrive on index 0 (a new id means a new call)', () => {
    const chunks = [
      chunk({ role: 'assistant', content: null }),
      chunk({
        tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
      chunk({
        tool_calls: [{ index: 0, id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } }],
      }),
      chunk({}, 'tool_calls'),
    ];
    const { out, end } = runHook(hook(), chunks);
    expect(streamedCalls(out)).toEqual([
      { index: 0, id: 'a', name: 'f', args: '{"x":1}' },
      { index: 1, id: 'b', name: 'g', args: '{}' },
    ]);
    expect(kinds(end.effects)).toEqual({ 'duplicate-index': 1 });
  });

  it('a same-name call after complete arguments on the same index (no ids) is a new call', () => {
    const chunks = [
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":2}' } }] }),
      chunk({}, 'tool_calls'),
    ];
    const { out, end } = runHook(hook(), chunks);
    const calls = streamedCalls(out);
    expect(calls.map((c) => c.args)).toEqual(['{"a":1}', '{"a":2}']);
    expect(calls[0]?.id).not.toBe(calls[1]?.id);
    expect(kinds(end.effects)).toEqual({ 'duplicate-index': 1, 'missing-id': 2, 'missing-type': 2 });
  });

  it('a repeated header after complete arguments is not a new call unless arguments follow', () => {
    const repeated = [
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '' } }] }),
      chunk({}, 'tool_calls'),
    ];
    expect(streamedCalls(runHook(hook(), repeated).out).map((c) => c.args)).toEqual(['{"a":1}']);
    const second = [
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":2}' } }] }),
      chunk({}, 'tool_calls'),
    ];
    const calls = streamedCalls(runHook(hook(), second).out);
    expect(calls.map((c) => [c.name, c.args])).toEqual([
      ['f', '{"a":1}'],
      ['f', '{"a":2}'],
    ]);
  });

  it('strips id and name repeated on continuation deltas, and re-indexes from 0', () => {
    const chunks = [
      chunk({
        tool_calls: [{ index: 3, id: 'x', type: 'function', function: { name: 'f', arguments: '{"q":' } }],
      }),
      chunk({
        tool_calls: [{ index: 3, id: 'x', type: 'function', function: { name: 'f', arguments: '"v"}' } }],
      }),
      chunk({}, 'tool_calls'),
    ];
    const { out } = runHook(hook(), chunks);
    expect(streamedCalls(out)).toEqual([{ index: 0, id: 'x', name: 'f', args: '{"q":"v"}' }]);
  });

  it('duplicate ids across calls get derived ids', () => {
    const chunks = [
      chunk({
        tool_calls: [{ index: 0, id: 'same', type: 'function', function: { name: 'f', arguments: '{}' } }],
      }),
      chunk({
        tool_calls: [{ index: 1, id: 'same', type: 'function', function: { name: 'g', arguments: '{}' } }],
      }),
      chunk({}, 'tool_calls'),
    ];
    const { out, end } = runHook(hook(), chunks);
    const ids = streamedCalls(out).map((c) => c.id);
    expect(ids[0]).toBe('same');
    expect(ids[1]).toMatch(/^call_/);
    expect(kinds(end.effects)).toEqual({ 'duplicate-id': 1 });
  });

  it('finish tool_calls on cut-off arguments becomes length; without calls becomes stop', () => {
    const cut = [
      chunk({
        tool_calls: [
          { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{"q": "abc' } },
        ],
      }),
      chunk({}, 'tool_calls'),
    ];
    expect(finishOf(runHook(hook(), cut).out)).toBe('length');
    expect(finishOf(runHook(hook(), [chunk({ content: 'hi' }), chunk({}, 'tool_calls')]).out)).toBe('stop');
  });
});
