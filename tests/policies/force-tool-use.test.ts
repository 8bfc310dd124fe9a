import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { type ForceToolUseMemo, forceToolUsePolicy } from '../../policies/force-tool-use/index.js';
import type { EffectShape, RequestDecision } from '../../policies/types.js';
import {
  call,
  chunk,
  completion,
  ctxWith,
  finishOf,
  request,
  runHook,
  runNonStream,
  runStream,
  assemble,
  splitAt,
  streamedCalls,
  streamedContent,
  timeTool,
  tool,
  weatherTool,
} from './helpers.js';

const p = forceToolUsePolicy;

function onRequest(
  req: ChatCompletionRequest,
  requiredRejected = false,
): Extract<RequestDecision, { action: 'continue' }> {
  const d = p.onRequest!(req, ctxWith({ requiredRejected }), req);
  if (d.action !== 'continue') throw new Error('rejected');
  return d;
}

const forcedMemo: ForceToolUseMemo = {
  finalAnswerName: 'final_answer',
  forced: true,
  toolChoiceSent: 'required',
};

function respond(message: Parameters<typeof completion>[0], finish: string | null = 'tool_calls') {
  const sent = request({ tools: [weatherTool] });
  const d = p.onResponse!(completion(message, finish), ctxWith(), forcedMemo, sent, sent);
  if (d.action !== 'continue') throw new Error('retry');
  return { choice: d.response.choices[0]!, effects: d.effects };
}

describe('force-tool-use: request', () => {
  it('adds final_answer and tool_choice "required" when tool_choice is absent or auto', () => {
    for (const tool_choice of [undefined, 'auto' as const]) {
      const req = request({ tools: [weatherTool], ...(tool_choice ? { tool_choice } : {}) });
      const d = onRequest(req);
      expect(d.request.tool_choice).toBe('required');
      expect(d.request.tools?.map((t) => t.function.name)).toEqual(['get_weather', 'final_answer']);
      const fa = d.request.tools?.[1]?.function;
      expect(fa?.parameters).toMatchObject({
        type: 'object',
        required: ['answer'],
        properties: { answer: { type: 'string' } },
      });
      expect(fa?.description).toMatch(/ONLY way/);
      expect(d.memo).toEqual({ finalAnswerName: 'final_answer', forced: true, toolChoiceSent: 'required' });
      expect(d.effects).toEqual([
        { policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'required' } },
      ]);
      expect(req.tools).toHaveLength(1); // the input is not mutated
    }
  });

  it('copies the request keys in order, a "__proto__" key as data (never as the prototype)', () => {
    const text =
      '{"model":"m","__proto__":{"polluted":1},"messages":[{"role":"user","content":"hi"}],"tools":[]}';
    const req = JSON.parse(text) as ChatCompletionRequest;
    req.tools = [weatherTool];
    const sent = onRequest(req).request;
    expect(Object.getPrototypeOf(sent)).toBe(Object.prototype);
    expect((sent as unknown as { polluted?: number }).polluted).toBeUndefined();
    expect(Object.keys(sent)).toEqual(['model', '__proto__', 'messages', 'tools', 'tool_choice']);
    expect(JSON.stringify(sent)).toContain('"__proto__":{"polluted":1}');
    const plain = onRequest(request({ tools: [weatherTool], tool_choice: 'auto', temperature: 0 })).request;
    expect(Object.keys(plain)).toEqual(['model', 'messages', 'tools', 'tool_choice', 'temperature']);
  });

  it('sends "auto" (still with final_answer) when the upstream is known to reject required', () => {
    const d = onRequest(request({ tools: [weatherTool] }), true);
    expect(d.request.tool_choice).toBe('auto');
    expect(d.request.tools).toHaveLength(2);
    expect(d.effects[0]?.detail).toEqual({ toolChoice: 'auto' });
  });

  it('picks a non-colliding name when the client declares final_answer', () => {
    const d = onRequest(request({ tools: [tool('final_answer'), tool('final_answer_2')] }));
    expect(d.request.tools?.map((t) => t.function.name)).toEqual([
      'final_answer',
      'final_answer_2',
      'final_answer_3',
    ]);
    expect((d.memo as ForceToolUseMemo).finalAnswerName).toBe('final_answer_3');
  });

  it('leaves explicit choices, tool-less requests and logprobs requests untouched', () => {
    const cases: ChatCompletionRequest[] = [
      request({ tools: [weatherTool], tool_choice: 'none' }),
      request({ tools: [weatherTool], tool_choice: 'required' }),
      request(),
      request({ tools: [] }),
      // logprobs would describe the final_answer JSON, not the text the client gets (issue 9).
      request({ tools: [weatherTool], logprobs: true }),
      request({ tools: [weatherTool], logprobs: true, top_logprobs: 3 }),
      request({ tools: [weatherTool], top_logprobs: 0 }),
    ];
    for (const req of cases) {
      const d = onRequest(req);
      expect(d.request).toBe(req);
      expect(d.effects).toEqual([]);
      expect((d.memo as ForceToolUseMemo).forced).toBe(false);
    }
    // A named tool keeps final_answer declared (the prompt's bytes), the client's choice as sent.
    const named = { type: 'function' as const, function: { name: 'get_weather' } };
    const forced = onRequest(request({ tools: [weatherTool] })).request;
    const d = onRequest(request({ tools: [weatherTool], tool_choice: named }));
    expect(JSON.stringify(d.request.tools)).toBe(JSON.stringify(forced.tools));
    expect(d.request.tool_choice).toEqual(named);
    expect(d.effects).toEqual([]);
    expect(d.memo).toMatchObject({ forced: false, named: true, finalAnswerName: 'final_answer' });
    // Not where the auto turn goes unforced (logprobs) or with another answer tool (a JSON format).
    for (const req of [
      request({ tools: [weatherTool], tool_choice: named, logprobs: true }),
      request({ tools: [weatherTool], tool_choice: named, response_format: { type: 'json_object' } }),
    ])
      expect(onRequest(req).request.tools).toEqual([weatherTool]);
    expect(onRequest(request({ tools: [weatherTool], logprobs: false })).request.tool_choice).toBe(
      'required',
    );
    // {type:"text"} is no format at all.
    expect(
      onRequest(request({ tools: [weatherTool], response_format: { type: 'text' } })).request.tool_choice,
    ).toBe('required');
  });
});

/** A streamed call: its head, one chunk per argument fragment, then the finish. */
function toolCallChunks(fragments: string[], name: string): ChatCompletionChunk[] {
  return [
    chunk({
      role: 'assistant',
      tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name, arguments: '' } }],
    }),
    ...fragments.map((f) => chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] })),
    chunk({}, 'tool_calls'),
  ];
}

describe('force-tool-use: an answer format beside tools (structured output)', () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const paramsOf = (r: ChatCompletionRequest) =>
    (r.tools ?? []).find((t) => t.function.name === 'final_answer')?.function.parameters;

  it('is forced: the answer tool takes the client schema, and response_format is not sent', () => {
    const req = request({
      tools: [weatherTool],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
    });
    const d = onRequest(req);
    expect(d.request.tool_choice).toBe('required');
    expect(d.request.response_format).toBeUndefined();
    expect(paramsOf(d.request)).toEqual(schema);
    expect((d.memo as ForceToolUseMemo).answer?.kind).toBe('json_schema');
    expect(req.response_format).toBeDefined(); // never mutated
  });

  it('json_object: any JSON object; a non-object schema is wrapped under one key', () => {
    expect(
      paramsOf(
        onRequest(request({ tools: [weatherTool], response_format: { type: 'json_object' } })).request,
      ),
    ).toEqual({
      type: 'object',
    });
    const list = { type: 'array', items: { type: 'string' } };
    const d = onRequest(
      request({
        tools: [weatherTool],
        response_format: { type: 'json_schema', json_schema: { name: 'l', schema: list } },
      }),
    );
    expect(paramsOf(d.request)).toEqual({
      type: 'object',
      properties: { answer: list },
      required: ['answer'],
      additionalProperties: false,
    });
  });

  it('a schema that is no JSON schema object is rejected, naming the field', () => {
    const d = forceToolUsePolicy.onRequest!(
      request({
        tools: [weatherTool],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 7 } },
      }),
      ctxWith(),
      request({
        tools: [weatherTool],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 7 } },
      }),
    );
    expect(d.action).toBe('reject');
  });

  it('unwraps the answer into its JSON text; invalid answers stay calls while a retry can follow', () => {
    const original = request({
      tools: [weatherTool],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
    });
    const ok = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', '{"city":"Oslo"}')] }, 'tool_calls'),
      original,
      ctxWith(),
    );
    expect(ok.response?.choices[0]?.message.content).toBe('{"city":"Oslo"}');
    expect(ok.effects).toContainEqual(
      expect.objectContaining({ kind: 'schema-answer', detail: { outcome: 'valid' } }),
    );
    const bad = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', '{"town":"Oslo"}')] }, 'tool_calls'),
      original,
      ctxWith(),
    );
    expect(bad.retry).toBeDefined();
    // Retries spent: delivered as it is, counted invalid.
    const spent = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', '{"town":"Oslo"}')] }, 'tool_calls'),
      original,
      ctxWith({ retriesUsed: 1 }),
    );
    expect(spent.response?.choices[0]?.message.content).toBe('{"town":"Oslo"}');
    expect(spent.effects).toContainEqual(
      expect.objectContaining({ kind: 'schema-answer', detail: { outcome: 'invalid' } }),
    );
  });

  it('streamed equals non-streamed for any split of the answer', () => {
    const original = request({
      tools: [weatherTool],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
    });
    const args = '{"city": "Zürich \\"centre\\""}';
    const whole = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', args)] }, 'tool_calls'),
      original,
      ctxWith(),
    );
    for (let cut = 1; cut < args.length; cut += 3) {
      const chunks = toolCallChunks([args.slice(0, cut), args.slice(cut)], 'final_answer');
      const { out } = runStream(chunks, original, ctxWith());
      const got = assemble(out);
      expect(got.content).toBe(whole.response?.choices[0]?.message.content);
      expect(got.finish).toBe('stop');
    }
  });
});

describe('force-tool-use: response', () => {
  it('a lone final_answer becomes an ordinary assistant message', () => {
    const { choice, effects } = respond({
      content: '',
      tool_calls: [call('c1', 'final_answer', '{"answer":"Paris is sunny."}')],
    });
    expect(choice.message).toEqual({ role: 'assistant', content: 'Paris is sunny.' });
    expect(choice.finish_reason).toBe('stop');
    expect(effects).toEqual([
      {
        policy: 'force-tool-use',
        kind: 'final-answer',
        count: 1,
        detail: { mixed: false, truncated: false, raw: false },
      },
    ]);
  });

  it('final_answer with real calls: calls stay, the answer goes to content, re-indexed', () => {
    const { choice } = respond({
      content: null,
      tool_calls: [
        { ...call('c0', 'final_answer', '{"answer":"Checking."}'), index: 0 },
        { ...call('c1', 'get_weather', '{"city":"Paris"}'), index: 1 },
      ],
    });
    expect(choice.message.content).toBe('Checking.');
    expect(choice.message.tool_calls).toEqual([
      { ...call('c1', 'get_weather', '{"city":"Paris"}'), index: 0 },
    ]);
    expect(choice.finish_reason).toBe('tool_calls');
  });

  it('keeps prose written before the call', () => {
    const { choice } = respond({
      content: 'Let me think.',
      tool_calls: [call('c', 'final_answer', '{"answer":"42"}')],
    });
    expect(choice.message.content).toBe('Let me think.\n\n42');
  });

  it('cut-off arguments give the decoded prefix with finish_reason "length"', () => {
    const { choice, effects } = respond(
      { tool_calls: [call('c', 'final_answer', '{"answer":"The weather in Par')] },
      'length',
    );
    expect(choice.message.content).toBe('The weather in Par');
    expect(choice.finish_reason).toBe('length');
    expect((effects[0] as EffectShape | undefined)?.detail).toMatchObject({ truncated: true });
    // Even when the upstream claimed "tool_calls".
    expect(respond({ tool_calls: [call('c', 'final_answer', '{"answer":"ab\\u00')] }).choice).toMatchObject({
      message: { content: 'ab' },
      finish_reason: 'length',
    });
  });

  it('an upstream "length" stays "length" even when the JSON happens to be complete', () => {
    const { choice } = respond({ tool_calls: [call('c', 'final_answer', '{"answer":"short"}')] }, 'length');
    expect(choice).toMatchObject({ message: { content: 'short' }, finish_reason: 'length' });
  });

  // Regression (issue 9): {"response": "..."} reached the client as raw JSON text.
  it('a lone string field under another key is the answer', () => {
    const { choice, effects } = respond({ tool_calls: [call('c', 'final_answer', '{"response":"hello"}')] });
    expect(choice.message.content).toBe('hello');
    expect(choice.message.tool_calls).toBeUndefined();
    expect(choice.finish_reason).toBe('stop');
    expect(effects).toEqual([
      {
        policy: 'force-tool-use',
        kind: 'final-answer',
        count: 1,
        detail: { mixed: false, truncated: false, raw: false, field: 'response' },
      },
    ]);
  });

  it('no answer string: left as a call for corrective retry while one can follow', () => {
    const fa = call('c', 'final_answer', '{"n": 1}');
    const { choice, effects } = respond({ tool_calls: [fa, call('r', 'get_weather', '{"city":"Rome"}')] });
    expect(choice.message.tool_calls?.map((c) => c.function.name)).toEqual(['get_weather', 'final_answer']);
    expect(effects.map((e) => e.kind)).toEqual(['final-answer-invalid']);
  });

  it('no answer string and retries spent: the raw arguments as a last resort, counted', () => {
    const sent = request({ tools: [weatherTool] });
    const res = completion({ tool_calls: [call('c', 'final_answer', '{"n": 1}')] }, 'tool_calls');
    const d = p.onResponse!(res, ctxWith({ retriesUsed: 1 }), forcedMemo, sent, sent);
    if (d.action !== 'continue') throw new Error('retry');
    expect(d.response.choices[0]!.message.content).toBe('{"n": 1}');
    expect(d.response.choices[0]!.message.tool_calls).toBeUndefined();
    expect(d.effects.map((e) => e.kind)).toEqual(['final-answer', 'final-answer-raw']);
  });

  it('counts forced requests that came back as prose', () => {
    const { choice, effects } = respond({ content: 'I ran the tool, it is sunny.' }, 'stop');
    expect(choice.message.content).toBe('I ran the tool, it is sunny.');
    expect(effects).toEqual([
      { policy: 'force-tool-use', kind: 'forced-but-prose', count: 1, detail: { toolChoice: 'required' } },
    ]);
  });

  it('does nothing without a memo (request not forced)', () => {
    const res = completion({ tool_calls: [call('c', 'final_answer', '{"answer":"x"}')] }, 'tool_calls');
    const d = p.onResponse!(
      res,
      ctxWith(),
      { finalAnswerName: null, forced: false, toolChoiceSent: null },
      request(),
      request(),
    );
    expect(d).toEqual({ action: 'continue', response: res, effects: [] });
  });
});

/** Streams a final_answer (optionally after content and beside a real call) in the given argument pieces. */
function finalAnswerStream(
  pieces: string[],
  opts: { content?: readonly string[]; realCall?: boolean; finish?: string } = {},
): ChatCompletionChunk[] {
  const chunks: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: null })];
  for (const c of opts.content ?? []) chunks.push(chunk({ content: c }));
  let faIndex = 0;
  if (opts.realCall) {
    chunks.push(
      chunk({
        tool_calls: [
          { index: 0, id: 'r0', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } },
        ],
      }),
    );
    faIndex = 1;
  }
  chunks.push(
    chunk({
      tool_calls: [
        { index: faIndex, id: 'fa', type: 'function', function: { name: 'final_answer', arguments: '' } },
      ],
    }),
  );
  pieces.forEach((piece, i) => {
    chunks.push(chunk({ tool_calls: [{ index: faIndex, function: { arguments: piece } }] }));
    if (opts.realCall && i === 0)
      chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }));
  });
  chunks.push(chunk({}, opts.finish ?? 'tool_calls'));
  return chunks;
}

function hook() {
  return p.createStreamHook!(ctxWith(), forcedMemo, request(), request());
}

describe('force-tool-use: stream', () => {
  it('turns streamed final_answer arguments into live content deltas', () => {
    const { out, end } = runHook(hook(), finalAnswerStream(['{"ans', 'wer": "Hel', 'lo \\u00', 'e9', '!"}']));
    const contents = out
      .map((c) => c.choices[0]?.delta.content)
      .filter((c) => typeof c === 'string' && c !== '');
    expect(contents).toEqual(['Hel', 'lo ', 'é', '!']);
    expect(streamedCalls(out)).toEqual([]);
    expect(finishOf(out)).toBe('stop');
    expect(end.effects).toEqual([
      {
        policy: 'force-tool-use',
        kind: 'final-answer',
        count: 1,
        detail: { mixed: false, truncated: false, raw: false },
      },
    ]);
  });

  it('keeps real calls, re-indexed from 0, and finish_reason tool_calls', () => {
    const { out } = runHook(hook(), finalAnswerStream(['{"answer":"ok"}'], { realCall: true }));
    expect(streamedContent(out)).toBe('ok');
    expect(streamedCalls(out)).toEqual([
      { index: 0, id: 'r0', name: 'get_weather', args: '{"city":"Paris"}' },
    ]);
    expect(finishOf(out)).toBe('tool_calls');
  });

  it('final_answer at index 0 before a real call: the real call becomes index 0', () => {
    const chunks = [
      chunk({
        tool_calls: [
          {
            index: 0,
            id: 'fa',
            type: 'function',
            function: { name: 'final_answer', arguments: '{"answer":"a"}' },
          },
        ],
      }),
      chunk({
        tool_calls: [
          { index: 1, id: 'r', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      }),
      chunk({}, 'tool_calls'),
    ];
    const { out } = runHook(hook(), chunks);
    expect(streamedCalls(out)).toEqual([{ index: 0, id: 'r', name: 'get_time', args: '{}' }]);
  });

  it('cut-off stream: decoded prefix, finish_reason length', () => {
    const { out } = runHook(hook(), finalAnswerStream(['{"answer": "The wea'], { finish: 'length' }));
    expect(streamedContent(out)).toBe('The wea');
    expect(finishOf(out)).toBe('length');
    // The upstream may even claim "tool_calls".
    expect(finishOf(runHook(hook(), finalAnswerStream(['{"answer": "x'])).out)).toBe('length');
  });

  it('a lone string field under another key streams live as the answer', () => {
    const { out } = runHook(hook(), finalAnswerStream(['{"resp', 'onse": "h', 'i"}']));
    const contents = out
      .map((c) => c.choices[0]?.delta.content)
      .filter((c) => typeof c === 'string' && c !== '');
    expect(contents).toEqual(['h', 'i']);
    expect(finishOf(out)).toBe('stop');
  });

  it('no string answer: handed on as a call while a retry can follow, else raw content', () => {
    const chunks = finalAnswerStream(['{"n":', ' 1}']);
    const retryable = runHook(hook(), chunks);
    expect(streamedCalls(retryable.out)).toEqual([
      { index: 0, id: 'fa', name: 'final_answer', args: '{"n": 1}' },
    ]);
    expect(retryable.end.effects.map((e) => e.kind)).toEqual(['final-answer-invalid']);
    const spent = runHook(
      p.createStreamHook!(ctxWith({ retriesUsed: 1 }), forcedMemo, request(), request()),
      chunks,
    );
    expect(streamedContent(spent.out)).toBe('{"n": 1}');
    expect(streamedCalls(spent.out)).toEqual([]);
    expect(spent.end.effects.map((e) => e.kind)).toEqual(['final-answer', 'final-answer-raw']);
  });

  it('property: any final_answer arguments shape, streamed == non-streamed (retries left or spent)', () => {
    const shapes = fc.constantFrom(
      '{"answer":"It is sunny"}',
      '{"response":"It is sunny"}',
      '{"response":"a","answer":"b"}',
      '{"confidence":0.5,"answer":"b"}',
      '{"answer":"a","sources":["x"]}',
      '{"answer":42}',
      '{"n":1}',
      '{}',
      'not json',
      '{"response":"cut of',
      '{"resp',
    );
    fc.assert(
      fc.property(
        shapes,
        fc.array(fc.nat(40), { maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom('tool_calls', 'length', 'stop'),
        (args, cuts, realCall, spent, upstreamFinish) => {
          const ctx = ctxWith({ retriesUsed: spent ? 1 : 0 });
          const sent = request({ tools: [weatherTool, timeTool] });
          const calls = [call('fa', 'final_answer', args)];
          if (realCall) calls.push(call('r0', 'get_weather', '{"city":"Paris"}'));
          const ns = p.onResponse!(
            completion({ content: '', tool_calls: calls }, upstreamFinish),
            ctx,
            forcedMemo,
            sent,
            sent,
          );
          if (ns.action !== 'continue') throw new Error('retry');
          const expected = ns.response.choices[0]!;
          const { out, end } = runHook(
            p.createStreamHook!(ctx, forcedMemo, sent, sent),
            finalAnswerStream(splitAt(args, cuts), { realCall, finish: upstreamFinish }),
          );
          const names = (expected.message.tool_calls ?? []).map((c) => c.function.name);
          expect(streamedCalls(out).map((c) => c.name)).toEqual(names);
          expect(end.effects.map((e) => e.kind)).toEqual(ns.effects.map((e) => e.kind));
          if (names.includes('final_answer')) {
            // Handed on for a retry: the turn is replaced, only the call shape must agree.
            expect(streamedCalls(out).at(-1)?.args).toBe(args);
            return;
          }
          expect(streamedContent(out)).toBe(expected.message.content ?? '');
          expect(finishOf(out)).toBe(expected.finish_reason);
          expect(end.effects).toEqual(ns.effects);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('prose without any call passes through and is counted as forced-but-prose', () => {
    const chunks = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'I ran it.' }),
      chunk({}, 'stop'),
    ];
    const { out, end } = runHook(hook(), chunks);
    expect(streamedContent(out)).toBe('I ran it.');
    expect(end.effects.map((e) => e.kind)).toEqual(['forced-but-prose']);
  });

  it('usage chunks pass through', () => {
    const usage = {
      ...chunk({}),
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    };
    expect(hook().onChunk(usage)).toEqual([usage]);
  });

  it('property: streamed content equals the non-streamed content for any chunking', () => {
    const answer = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: 'binary' }),
      fc
        .array(fc.constantFrom('"', '\\', '\\u', '😀', '中文', '\n', '\u0001', '}', ' '))
        .map((a) => a.join('')),
    );
    fc.assert(
      fc.property(
        answer,
        fc.array(fc.nat(300), { maxLength: 10 }),
        fc.constantFrom([], ['  '], ['Intro', ' text'], ['\n']),
        fc.boolean(),
        fc.nat(),
        fc.constantFrom('tool_calls', 'length', 'stop'),
        (ans, cuts, content, realCall, cutAt, upstreamFinish) => {
          const full = JSON.stringify({ answer: ans });
          // Half the runs are cut off (max_tokens), half complete.
          const args = cutAt % 2 === 0 ? full : full.slice(0, cutAt % (full.length + 1));
          const sent = request({ tools: [weatherTool, timeTool] });
          const calls = [call('fa', 'final_answer', args)];
          if (realCall) calls.push(call('r0', 'get_weather', '{"city":"Paris"}'));
          const nonStream = p.onResponse!(
            completion({ content: content.join(''), tool_calls: calls }, upstreamFinish),
            ctxWith(),
            forcedMemo,
            sent,
            sent,
          );
          if (nonStream.action !== 'continue') throw new Error('retry');
          const expected = nonStream.response.choices[0]!;
          const { out } = runHook(
            hook(),
            finalAnswerStream(splitAt(args, cuts), { content, realCall, finish: upstreamFinish }),
          );
          expect(streamedContent(out)).toBe(expected.message.content ?? '');
          expect(finishOf(out)).toBe(expected.finish_reason);
          expect(streamedCalls(out).map((c) => c.name)).toEqual(
            (expected.message.tool_calls ?? []).map((c) => c.function.name),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a last user turn that forbids tools (an agent compaction turn)', () => {
  // Claude Code 2.1's compaction prompt opens so (its binary's text); the turn keeps its tools.
  const compaction =
    'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n- Tool calls will be REJECTED and will waste your only turn \u2014 you will fail the task.\n\nYour task is to create a detailed summary of the conversation so far.';

  it('goes with tool_choice "auto", final_answer kept (the prompt as on other turns), the effect saying why', () => {
    const req = request({
      messages: [
        { role: 'user', content: 'What is the weather in Paris?' },
        { role: 'assistant', content: 'Sunny.' },
        { role: 'user', content: [{ type: 'text', text: compaction }] },
      ],
      tools: [weatherTool],
    });
    const d = onRequest(req);
    expect(d.request.tool_choice).toBe('auto');
    expect(d.request.tools?.map((t) => t.function.name)).toEqual(['get_weather', 'final_answer']);
    expect(d.request.tools).toEqual(onRequest(request({ tools: [weatherTool] })).request.tools);
    expect(d.effects).toEqual([
      { policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'auto' } },
      { policy: 'force-tool-use', kind: 'text-only-turn', count: 1 },
    ]);
    expect((d.memo as ForceToolUseMemo).finalAnswerName).toBe('final_answer');
  });

  it('in a user\u2019s own words, at the end of a long turn, too; not when tools are only mentioned', () => {
    const textOnly = (content: string) =>
      onRequest(request({ messages: [{ role: 'user', content }], tools: [weatherTool] })).request
        .tool_choice === 'auto';
    expect(textOnly(`${'x'.repeat(100_000)} Summarise this, and don't call any tools.`)).toBe(true);
    expect(textOnly(`Reply with text only. ${'x'.repeat(100_000)}`)).toBe(true);
    for (const content of [
      'Use the weather tool for Paris.',
      'Which tools do you have?',
      'Do not call the weather tool twice.',
    ]) {
      expect(textOnly(content), content).toBe(false);
    }
  });

  it('an agent\u2019s compaction that declares its tools and forbids none (the Continue CLI 1.5\u2019s, Codex\u2019s local one) goes with "auto" too', () => {
    // The Continue CLI 1.5.47's compaction ask (its src/compaction.ts), sent with the session's
    // tools. Forced, the model called the task's next tool; the CLI ran it and compacted again.
    const continueAsk =
      'Please provide a concise summary of our conversation so far, capturing the key context, decisions made, and current state. Format this as a single comprehensive message that preserves all important information needed to continue our work.';
    // Codex's local compaction prompt (codex-rs core/templates/compact/prompt.md) opens so.
    const codexAsk =
      'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM.';
    for (const ask of [continueAsk, codexAsk]) {
      const d = onRequest(
        request({
          messages: [
            { role: 'user', content: 'What is the weather in Paris?' },
            { role: 'user', content: ask },
          ],
          tools: [weatherTool],
        }),
      );
      expect(d.request.tool_choice, ask).toBe('auto');
      expect(d.request.tools?.map((t) => t.function.name)).toEqual(['get_weather', 'final_answer']);
      expect(d.effects).toContainEqual({ policy: 'force-tool-use', kind: 'text-only-turn', count: 1 });
    }
  });

  it('Claude Code\u2019s ask with a reminder after it (its deferred tools\u2019 list, sent up as a user message) goes with "auto"', () => {
    const d = onRequest(
      request({
        messages: [
          { role: 'user', content: 'What is the weather in Paris?' },
          { role: 'assistant', content: 'Sunny.' },
          { role: 'user', content: [{ type: 'text', text: compaction }] },
          {
            role: 'user',
            content:
              '<system-reminder>\nThe following deferred tools are now available via ToolSearch.\n</system-reminder>',
          },
        ],
        tools: [weatherTool],
      }),
    );
    expect(d.request.tool_choice).toBe('auto');
    expect(d.effects).toContainEqual({ policy: 'force-tool-use', kind: 'text-only-turn', count: 1 });
  });

  it('only the last turn counts: an earlier compaction prompt in the history does not unforce later turns', () => {
    const d = onRequest(
      request({
        messages: [
          { role: 'user', content: compaction },
          { role: 'assistant', content: 'Summary: the user asked about Paris.' },
          { role: 'user', content: 'Now check the weather in Rome.' },
        ],
        tools: [weatherTool],
      }),
    );
    expect(d.request.tool_choice).toBe('required');
  });
});
