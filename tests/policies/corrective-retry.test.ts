import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { type CorrectiveRetryMemo, correctiveRetryPolicy } from '../../policies/corrective-retry/index.js';
import { markLiveAnswer, type ResponseDecision } from '../../policies/types.js';
import { validateArguments, validatorCacheSize } from '../../policies/kit/validation/validate-arguments.js';
import {
  call,
  chunk,
  completion,
  ctxWith,
  finishOf,
  request,
  runHook,
  streamedCalls,
  streamedContent,
  timeTool,
  weatherTool,
} from './helpers.js';
import { finalAnswerTool } from '../../policies/force-tool-use/final-answer.js';

const p = correctiveRetryPolicy;
const original = request({ tools: [weatherTool, timeTool] });
const sent: ChatCompletionRequest = {
  ...original,
  tools: [weatherTool, timeTool, finalAnswerTool('final_answer')],
  tool_choice: 'required',
};

function judge(
  message: Parameters<typeof completion>[0],
  opts: { retriesUsed?: number; memo?: CorrectiveRetryMemo; maxRetries?: number } = {},
): ResponseDecision {
  const ctx = ctxWith(
    { retriesUsed: opts.retriesUsed ?? 0 },
    opts.maxRetries === undefined ? {} : { maxRetries: opts.maxRetries },
  );
  return p.onResponse!(completion(message, 'tool_calls'), ctx, opts.memo, sent, original);
}

function retryOf(d: ResponseDecision) {
  if (d.action !== 'retry') throw new Error(`expected a retry, got ${d.action}`);
  return d;
}

describe('validateArguments', () => {
  it('reports precise, actionable messages', () => {
    const schema = weatherTool.function.parameters!;
    expect(validateArguments(schema, { city: 'Paris', days: 3 })).toEqual({ valid: true, issues: [] });
    const r = validateArguments(schema, { days: 'three', extra: 1 });
    expect(r.valid).toBe(false);
    expect(r.issues.map((i) => i.message)).toEqual([
      '`city` is required but missing.',
      '`extra` is not a known parameter.',
      '`days` must be an integer, got "three".',
    ]);
  });

  it('caches compiled validators by schema and tolerates schemas that do not compile', () => {
    // The cache is process-wide and other files share it (isolate: false): a first compile may
    // rotate its generations, so only the second, equal schema is asserted to add nothing.
    validateArguments({ type: 'object', properties: { z: { type: 'number' } } }, { z: 1 });
    const afterFirst = validatorCacheSize();
    expect(afterFirst).toBeGreaterThan(0);
    validateArguments({ type: 'object', properties: { z: { type: 'number' } } }, { z: 2 });
    expect(validatorCacheSize()).toBe(afterFirst);
    expect(validateArguments({ type: 'no-such-type' }, {})).toMatchObject({ valid: true });
    expect(validateArguments({ type: 'no-such-type' }, {}).schemaError).toBeTruthy();
  });
});

describe('corrective-retry', () => {
  it('continues, untouched, when every call is valid', () => {
    const res = completion({ tool_calls: [call('a', 'get_weather', '{"city":"Paris"}')] }, 'tool_calls');
    const d = p.onResponse!(res, ctxWith(), undefined, sent, original);
    expect(d).toEqual({ action: 'continue', response: res, effects: [] });
  });

  it('a schema part that cannot be enforced (a backreference RE2 cannot run) is reported, not silently passed', () => {
    const tool = {
      type: 'function' as const,
      function: {
        name: 'tag',
        parameters: { type: 'object', properties: { t: { type: 'string', pattern: '^(a)\\1$' } } },
      },
    };
    const req = request({ tools: [tool] });
    const res = completion({ tool_calls: [call('a', 'tag', '{"t":"ab"}')] }, 'tool_calls');
    const d = p.onResponse!(res, ctxWith(), undefined, req, req);
    expect(d.action).toBe('continue');
    expect(d.effects).toEqual([
      expect.objectContaining({
        kind: 'schema-unenforced',
        detail: expect.objectContaining({ tool: 'tag' }),
      }),
    ]);
  });

  it('schema failure: retry with the failed turn and feedback saying what was wrong and what to do', () => {
    const d = retryOf(
      judge({
        content: null,
        tool_calls: [
          call('a', 'get_weather', '{"city":"Paris","days":"three"}'),
          call('b', 'get_time', '{}'),
        ],
      }),
    );
    expect(d.reason).toBe('schema');
    const added = d.request.messages.slice(sent.messages.length);
    // The replayed ids are 9 alphanumerics (Mistral templates refuse any other), each answered.
    const ids = (added[0]?.tool_calls ?? []).map((c) => c.id);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(new Set(ids).size).toBe(2);
    expect(added[0]).toMatchObject({ role: 'assistant' });
    expect(added[1]).toMatchObject({ role: 'tool', tool_call_id: ids[0] });
    expect(added[1]?.content).toBe(
      'Error: invalid arguments for get_weather: `days` must be an integer, got "three". ' +
        'Call get_weather again with corrected arguments, or call final_answer to reply to the user.',
    );
    expect(added[2]).toMatchObject({ role: 'tool', tool_call_id: ids[1] });
    expect(String(added[2]?.content)).toMatch(
      /^Not executed: another tool call in the same turn was invalid \(get_weather\)/,
    );
    expect(d.request.tools).toEqual(sent.tools);
    expect(d.request.tool_choice).toBe('required');
    expect(d.effects).toContainEqual({
      policy: 'corrective-retry',
      kind: 'retry',
      count: 1,
      detail: { reason: 'schema', reasons: ['schema'] },
    });
    expect(
      d.effects.filter((e) => e.kind === 'validation-failed').map((e) => (e.detail as { tool: string }).tool),
    ).toEqual(['get_weather']);
  });

  it('undeclared tool: names the available tools', () => {
    const d = retryOf(judge({ tool_calls: [call('a', 'get_wether', '{}')] }));
    expect(d.reason).toBe('undeclared-tool');
    expect(d.request.messages.at(-1)?.content).toBe(
      'Error: the tool `get_wether` does not exist. Available tools: get_weather, get_time, final_answer. ' +
        'Call one of them instead, or call final_answer to reply to the user.',
    );
  });

  it('invalid JSON: quotes the text, and the replayed turn carries valid JSON', () => {
    const d = retryOf(judge({ tool_calls: [call('a', 'get_weather', '{"city": Paris}')] }));
    expect(d.reason).toBe('invalid-json');
    expect(String(d.request.messages.at(-1)?.content)).toContain('not valid JSON: {"city": Paris}');
    const replayed = d.request.messages.at(-2)?.tool_calls?.[0]?.function.arguments ?? '';
    expect(() => JSON.parse(replayed)).not.toThrow();
  });

  it('does not mention final_answer when it was not sent', () => {
    const d = p.onResponse!(
      completion({ tool_calls: [call('a', 'nope', '{}')] }, 'tool_calls'),
      ctxWith(),
      undefined,
      original,
      original,
    );
    expect(String(retryOf(d).request.messages.at(-1)?.content)).not.toContain('final_answer');
  });

  it('unparsed leak: asks for one JSON tool call in a user message', () => {
    const memo: CorrectiveRetryMemo = {
      leaks: [{ format: 'hermes', outcome: 'unrecovered', reason: 'unterminated JSON' }],
    };
    const d = retryOf(
      judge({ content: '<tool_call>{"name": "get_weather", "arguments": {"city": "Par' }, { memo }),
    );
    expect(d.reason).toBe('unparsed-leak');
    const added = d.request.messages.slice(sent.messages.length);
    expect(added.map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(String(added[1]?.content)).toMatch(
      /could not be parsed \(hermes: unterminated JSON\).*exactly one tool call/,
    );
    // Recovered leaks are fine.
    expect(
      judge(
        { tool_calls: [call('a', 'get_time', '{}')] },
        { memo: { leaks: [{ format: 'hermes', outcome: 'recovered' }] } },
      ).action,
    ).toBe('continue');
  });

  it('second failure: returned as is, with the validation errors as effects (never {})', () => {
    const d = judge({ tool_calls: [call('a', 'get_weather', '{"days":"x"}')] }, { retriesUsed: 1 });
    expect(d.action).toBe('continue');
    if (d.action !== 'continue') return;
    expect(d.response.choices[0]?.message.tool_calls?.[0]?.function.arguments).toBe('{"days":"x"}');
    expect(d.effects.map((e) => e.kind)).toEqual(['validation-failed', 'returned-invalid']);
    expect(judge({ tool_calls: [call('a', 'get_weather', '{"days":"x"}')] }, { maxRetries: 0 }).action).toBe(
      'continue',
    );
  });

  it('does not retry a turn cut off by max_tokens (the retry would be cut too)', () => {
    const res = completion({ tool_calls: [call('a', 'get_weather', '{"city": "Par')] }, 'length');
    const d = p.onResponse!(res, ctxWith(), undefined, sent, original);
    expect(d.action).toBe('continue');
    expect(d.effects.map((e) => e.kind)).toEqual(['validation-failed', 'returned-invalid']);
    expect(d.effects[1]?.detail).toMatchObject({ cutOff: true });
  });

  it('reports a fixed retry', () => {
    const d = judge({ tool_calls: [call('a', 'get_time', '{}')] }, { retriesUsed: 1 });
    expect(d.effects).toEqual([
      { policy: 'corrective-retry', kind: 'retry-outcome', count: 1, detail: { outcome: 'fixed' } },
    ]);
  });

  it('skips schema checks when validateArguments is off', () => {
    const ctx = ctxWith({}, { validateArguments: false });
    const d = p.onResponse!(
      completion({ tool_calls: [call('a', 'get_weather', '{"days":"x"}')] }, 'tool_calls'),
      ctx,
      undefined,
      sent,
      original,
    );
    expect(d.action).toBe('continue');
  });
});

describe('corrective-retry: stream', () => {
  const stream = (args: string) => [
    chunk({ role: 'assistant', content: null }),
    chunk({ content: 'Let me check.' }),
    chunk({
      tool_calls: [
        {
          index: 0,
          id: 'a',
          type: 'function',
          function: { name: 'get_weather', arguments: args.slice(0, 5) },
        },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(5) } }] }),
    chunk({}, 'tool_calls'),
  ];

  it('holds the turn while a retry is possible, then emits its text and calls properly', () => {
    const hook = p.createStreamHook!(ctxWith(), undefined, sent, original);
    const live = stream('{"city":"Paris"}').flatMap((c) => hook.onChunk(c));
    expect(streamedContent(live)).toBe('');
    expect(streamedCalls(live)).toEqual([]);
    expect(finishOf(live)).toBeNull();
    const end = hook.onEnd();
    expect(end.retry).toBeUndefined();
    expect(streamedContent(end.chunks)).toBe('Let me check.');
    expect(streamedCalls(end.chunks)).toEqual([
      { index: 0, id: 'a', name: 'get_weather', args: '{"city":"Paris"}' },
    ]);
    const firstCall = end.chunks.find((c) => c.choices[0]?.delta.tool_calls);
    expect(firstCall?.choices[0]?.delta.tool_calls?.[0]).toMatchObject({
      id: 'a',
      type: 'function',
      function: { name: 'get_weather' },
    });
    expect(finishOf(end.chunks)).toBe('tool_calls');
  });

  it('requests a retry at the end of an invalid stream, without finishing it', () => {
    const { out, end } = runHook(
      p.createStreamHook!(ctxWith(), undefined, sent, original),
      stream('{"city":"Paris","days":"x"}'),
    );
    expect(end.retry?.reason).toBe('schema');
    expect(end.retry?.request.messages.at(-2)?.content).toBe('Let me check.');
    expect(finishOf(out)).toBeNull();
    expect(streamedCalls(out)).toEqual([]);
  });

  it('reads leaks from a function in the memo at the end of the stream', () => {
    const leaks: CorrectiveRetryMemo['leaks'] = [];
    const memo: CorrectiveRetryMemo = { leaks: () => leaks };
    const hook = p.createStreamHook!(ctxWith(), memo, sent, original);
    hook.onChunk(chunk({ content: '<tool_call>{"na' }));
    hook.onChunk(chunk({}, 'stop'));
    (leaks as unknown as { format: string; outcome: string }[]).push({
      format: 'hermes',
      outcome: 'unrecovered',
    });
    expect(hook.onEnd().retry?.reason).toBe('unparsed-leak');
  });

  it('with no retries left, passes calls through live and only reports', () => {
    const { out, end } = runHook(
      p.createStreamHook!(ctxWith({ retriesUsed: 1 }), undefined, sent, original),
      stream('{"days":"x"}'),
    );
    expect(streamedCalls(out)).toEqual([{ index: 0, id: 'a', name: 'get_weather', args: '{"days":"x"}' }]);
    expect(end.retry).toBeUndefined();
    expect(end.effects.map((e) => e.kind)).toEqual(['validation-failed', 'returned-invalid']);
  });
});

describe('corrective-retry: stream edge cases', () => {
  it('text of a turn that is retried never reaches the client (streamed equals non-streamed)', () => {
    const hook = p.createStreamHook!(ctxWith(), undefined, sent, original);
    const live = [
      chunk({
        tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'nope', arguments: '{}' } }],
      }),
      chunk({ content: 'tail' }, 'tool_calls'),
    ].flatMap((c) => hook.onChunk(c));
    expect(streamedContent(live)).toBe('');
    expect(finishOf(live)).toBeNull();
    const end = hook.onEnd();
    expect(end.retry?.reason).toBe('undeclared-tool');
    expect(end.chunks).toEqual([]);
  });

  it('a live final answer commits the text held before it', () => {
    const hook = p.createStreamHook!(ctxWith(), undefined, sent, original);
    const answer = markLiveAnswer(chunk({ content: 'It is sunny.' }));
    const live = [chunk({ content: 'Thinking aloud. ' }), answer].flatMap((c) => hook.onChunk(c));
    expect(streamedContent(live)).toBe('Thinking aloud. It is sunny.');
  });

  it('accepts schemas that name the 2020-12 draft', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { n: { type: 'integer' } },
    };
    expect(validateArguments(schema, { n: 'x' }).valid).toBe(false);
  });
});
