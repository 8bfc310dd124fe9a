/**
 * The capture ring's accounting (server/capture/ring.ts) and the read-back of captured bodies
 * (reassemble.ts) for every front door's shapes.
 */
import { describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { answer } from '../../server/capture/query.js';
import { affinityKey } from '../../server/affinity.js';
import {
  beginCapture,
  captureEffects,
  EffectDecision,
  finishCapture,
  sessionLabel,
} from '../../server/capture/recorder.js';
import { reassemble } from '../../server/capture/reassemble.js';
import { forcedButProseEffect, forcedEffect } from '../../policies/force-tool-use/effects.js';
import { redactedHeaderPairs, redactedHeaderText } from '../../server/capture/redact.js';
import { ownRun, runOfHistory } from '../../server/capture/runs.js';
import { prng } from '../support/cost-scaling.js';
import type { ChatCall } from '../../server/chat/context.js';
import { harnessOf } from '../../server/chat/harness-summary.js';
import { type HarnessTrace, newTrace } from '../../server/chat/trace.js';
import {
  Attempt,
  type CaptureRecord,
  commonPrefix,
  CaptureRing,
  type RecordInit,
  type RecordWriter,
} from '../../server/capture/ring.js';

const record = (id: string, session = 's', model = 'm'): RecordInit => ({
  id,
  api: 'chat',
  model,
  stream: false,
  session,
  method: 'POST',
  path: '/v1/chat/completions',
});

describe('CaptureRing', () => {
  it('drops the oldest records while over its budget, and never exceeds it', () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    for (let i = 0; i < 500; i++) {
      const w = ring.open(record(`r${i}`));
      w.body = w.text('x'.repeat(3000));
      expect(ring.bytes).toBeLessThanOrEqual(64 * 1024);
    }
    const ids = ring.list({ limit: 1000 }).map((r) => r.id);
    expect(ids[0]).toBe('r499'); // newest first
    expect(ids.length).toBeGreaterThan(5);
    expect(ids.length).toBeLessThan(20);
    expect(ring.get('r0')).toBeUndefined();
    expect(ring.get('r499')).toBeDefined();
  });

  it('cuts a text at the per-text cap and at the record share, and says how much', () => {
    const ring = new CaptureRing({ maxBytes: 40 * 1024, textChars: 1000 });
    const w = ring.open(record('a'));
    expect(w.text('y'.repeat(5000))).toMatchObject({ cut: 4000 });
    // The record's share is a quarter of the ring (10 KB = 5,000 characters at 2 bytes each).
    const more = [
      w.text('z'.repeat(1000)),
      w.text('z'.repeat(1000)),
      w.text('z'.repeat(1000)),
      w.text('z'.repeat(1000)),
    ];
    expect(more.map((t) => t.text.length).reduce((a, b) => a + b, 0)).toBeLessThan(4000);
    expect(w.bytes).toBeLessThanOrEqual(ring.recordBytes);
    expect(w.fromBytes(Buffer.from('b'.repeat(3000)))).toMatchObject({ text: '', cut: 3000 });
  });

  it('a record evicted in flight keeps nothing more', () => {
    const ring = new CaptureRing({ maxBytes: 16 * 1024, textChars: 2000 });
    const first = ring.open(record('first'));
    for (let i = 0; i < 20; i++) ring.open(record(`n${i}`)).text('q'.repeat(2000));
    expect(first.evicted).toBe(true);
    const before = ring.bytes;
    first.event('payload');
    first.client('bytes');
    expect(first.text('more')).toEqual({ text: '', cut: 4 });
    expect(ring.bytes).toBe(before);
  });

  it('keeps a stream and the client frames as written, pieces of concurrent records interleaved', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 100_000 });
    const a = ring.open(record('a'));
    const b = ring.open(record('b'));
    for (const w of [a, b]) w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
    // A read that is a view into a larger buffer (as undici gives them), and non-ASCII text.
    const big = Buffer.from(`xxxx${'data: {"é":1}\n\n'.repeat(3)}yyyy`);
    for (let i = 0; i < 3; i++) {
      a.read(big.subarray(4, big.length - 4), 3);
      b.client(`data: ${i}ü\n\n`);
      a.client(Buffer.from(`data: ${i}\n\n`));
    }
    a.endEvents();
    a.endClient();
    b.endClient();
    expect(a.record.upstreamAttempts[0]!.response.text).toBe('data: {"é":1}\n\n'.repeat(9));
    expect(a.record.upstreamAttempts[0]!.events).toBe(9);
    expect(a.record.clientResponse.body.text).toBe('data: 0\n\ndata: 1\n\ndata: 2\n\n');
    expect(JSON.parse(JSON.stringify(b.record.clientResponse.body))).toEqual({
      text: 'data: 0ü\n\ndata: 1ü\n\ndata: 2ü\n\n',
      cut: 0,
    });
  });

  it("a text whose bytes the arena wrote over reads as cut, not as another record's bytes", () => {
    // The arena is half the ring (64 KB here). A record held past the ring's eviction stands for
    // one that outlived its bytes (many older streams in flight writing after it).
    const ring = new CaptureRing({ maxBytes: 128 * 1024, textChars: 8192 });
    const old = ring.open(record('old'));
    old.client('first words');
    old.endClient();
    const body = old.record.clientResponse.body;
    expect(body).toMatchObject({ text: 'first words', cut: 0 });
    for (let i = 0; i < 40; i++) {
      const w = ring.open(record(`n${i}`));
      w.client('z'.repeat(4000));
      w.endClient();
    }
    expect(old.evicted).toBe(true);
    expect(body.text).toBe('');
    expect(body.cut).toBe('first words'.length);
  });

  it('gives the earlier record of a reused request id a suffix: the id finds the newest', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    const first = ring.open(record('same'));
    const second = ring.open(record('same'));
    expect(second.record.id).toBe('same');
    expect(first.record.id).toMatch(/^same~\d+$/);
    expect(ring.get('same')).toBe(second.record);
    expect(ring.get(first.record.id)).toBe(first.record);
    expect(ring.size).toBe(2);
  });

  it('pages the list before a time, never ending a page inside a millisecond, the older ones counted', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    // Arrival times (ms) r0..r5: three of them in one millisecond.
    for (const [i, at] of [100, 200, 200, 200, 300, 400].entries()) ring.open({ ...record(`r${i}`), at });
    const ids = (p: { requests: Array<{ id: string }> }) => p.requests.map((r) => r.id);
    const first = ring.page({ limit: 3 });
    expect(ids(first)).toEqual(['r5', 'r4', 'r3', 'r2', 'r1']);
    expect(first.older).toBe(1);
    const next = ring.page({ limit: 3, before: 200 });
    expect(ids(next)).toEqual(['r0']);
    expect(next.older).toBe(0);
    expect(ring.page({ limit: 1 }).older).toBe(5);
    expect(ring.page({ limit: 1, before: 400, model: 'no-such' })).toEqual({ requests: [], older: 0 });
    expect(ring.list({ limit: 2 }).map((r) => r.id)).toEqual(['r5', 'r4']);
  });

  it('pages by arrival time when records were opened out of it: every record listed once', () => {
    // A record is opened once its request's body is read: concurrent requests open out of their
    // arrival order. Paged in the ring's order, a page cut at 400 left 350 (opened after it)
    // past the next page's `before`, and the inspector's pager never reached the oldest ones.
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    for (const [i, at] of [100, 300, 200, 400, 350, 350, 90].entries()) ring.open({ ...record(`r${i}`), at });
    const seen: string[] = [];
    let before: number | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const p = ring.page({ limit: 2, before });
      seen.push(...p.requests.map((r) => r.id));
      if (p.older === 0) break;
      before = p.requests.at(-1)!.at;
    }
    // Newest first by time; the two of one millisecond newest opened first.
    expect(seen).toEqual(['r3', 'r5', 'r4', 'r1', 'r2', 'r0', 'r6']);
    expect(ring.page({ limit: 3 }).older).toBe(4);
  });

  it('filters by session, model and outcome kind', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    ring.open(record('a', 's1', 'm1')).record.kinds = ['retried', 'leak_recovered'];
    ring.open(record('b', 's2', 'm1'));
    ring.open(record('c', 's1', 'm2'));
    expect(ring.list({ session: 's1' }).map((r) => r.id)).toEqual(['c', 'a']);
    expect(ring.list({ model: 'm1' }).map((r) => r.id)).toEqual(['b', 'a']);
    expect(ring.list({ outcome: 'leak_recovered' }).map((r) => r.id)).toEqual(['a']);
    expect(ring.session('s1').map((r) => r.id)).toEqual(['a', 'c']);
  });
});

describe('reassemble', () => {
  it('chat: a stream of events, or a whole completion', () => {
    const events = [
      '{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}',
      '{"choices":[{"index":0,"delta":{"content":"lo","reasoning_content":"hmm"}}]}',
      '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":"{\\"ci"}}]}}]}',
      '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\\":1}"}}]}}]}',
      '[DONE]',
    ].join('\n');
    expect(reassemble(events)).toMatchObject({
      content: 'Hello',
      reasoning: 'hmm',
      calls: [{ name: 'get_weather', arguments: '{"city":1}' }],
      stream: true,
    });
    const sse = events
      .split('\n')
      .map((e) => `data: ${e}\n\n`)
      .join('');
    expect(reassemble(sse).content).toBe('Hello');
    expect(reassemble('{"choices":[{"message":{"content":"whole"}}]}')).toMatchObject({
      content: 'whole',
      stream: false,
    });
    expect(reassemble('{"error":{"message":"CUDA out of memory"}}').error).toBe('CUDA out of memory');
  });

  it('Anthropic Messages: text and tool_use blocks, streamed or whole', () => {
    const sse = [
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"On it."}}',
      'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Read","input":{}}}',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":\\"a\\"}"}}',
    ].join('\n\n');
    expect(reassemble(sse)).toMatchObject({
      content: 'On it.',
      calls: [{ name: 'Read', arguments: '{"path":"a"}' }],
    });
    const whole =
      '{"type":"message","content":[{"type":"text","text":"Hi"},{"type":"tool_use","name":"Read","input":{"p":1}}]}';
    expect(reassemble(whole)).toMatchObject({
      content: 'Hi',
      calls: [{ name: 'Read', arguments: '{"p":1}' }],
    });
  });

  it('OpenAI Responses: output text and function calls, streamed or whole', () => {
    const sse = [
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","output_index":0,"delta":"Sure"}',
      'event: response.output_item.added\ndata: {"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","name":"shell"}}',
      'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\\"cmd\\":\\"ls\\"}"}',
    ].join('\n\n');
    expect(reassemble(sse)).toMatchObject({
      content: 'Sure',
      calls: [{ name: 'shell', arguments: '{"cmd":"ls"}' }],
    });
    const whole =
      '{"object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"Done"}]},{"type":"function_call","name":"shell","arguments":"{}"}]}';
    expect(reassemble(whole)).toMatchObject({ content: 'Done', calls: [{ name: 'shell', arguments: '{}' }] });
  });
});

describe('what a record keeps, read as it was written', () => {
  it('an effect kept as the policy object reads as the decision described at once', () => {
    const effect = { policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'required' } };
    const d = new EffectDecision(1.5, 1, effect as never);
    expect(JSON.parse(JSON.stringify(d))).toEqual({
      atMs: 1.5,
      attempt: 1,
      kind: 'forced',
      policy: 'force-tool-use',
      reason:
        'forced tool use: tool_choice "required" sent upstream (a prose answer then comes through final_answer)',
      detail: '{"toolChoice":"required"}',
    });
    expect(d.reason).toBe(JSON.parse(JSON.stringify(d)).reason);
  });
});

describe('a record kept as few objects (issue 28: capture CPU), read as the record it stands for', () => {
  it('JSON: every field of the record, the attempt and the texts, times to a tenth of a millisecond', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 10_000 });
    const at = 1_764_888_000_123;
    const w = ring.open({ ...record('j'), at });
    w.body = w.fromBytes(Buffer.from('{"model":"m"}'));
    const a = new Attempt(1, 'http://u/v1', at + 5, 1.26, true, w.text('{"sent":1}'));
    w.attempt(a);
    a.ttfbMs = 12.34;
    a.status = 200;
    w.read(Buffer.from('data: {"x":1}\n\n'), 1);
    w.endEvents();
    a.totalMs = 40;
    w.client('data: {"y":2}\n\n');
    w.endClient(200);
    w.durationMs = 41.26;
    w.tokens = { cached: 3, prompt: 10, completion: 2 };
    const json = JSON.parse(JSON.stringify(w));
    expect(json).toMatchObject({
      id: 'j',
      at,
      durationMs: 41.3,
      tokens: { cached: 3, prompt: 10, completion: 2 },
      clientRequest: { headers: {}, body: { text: '{"model":"m"}', cut: 0 } },
      upstreamAttempts: [
        {
          n: 1,
          upstream: 'http://u/v1',
          at: at + 5,
          queueMs: 1.3,
          ttfbMs: 12.3,
          totalMs: 40,
          stream: true,
          request: { text: '{"sent":1}', cut: 0 },
          status: 200,
          response: { text: 'data: {"x":1}\n\n', cut: 0 },
          events: 1,
        },
      ],
      clientResponse: { status: 200, body: { text: 'data: {"y":2}\n\n', cut: 0 } },
    });
    // The writer's own state is not part of what is read.
    expect(Object.keys(json)).not.toContain('bytes');
    expect(Object.keys(json)).not.toContain('ring');
    expect(w.upstreamAttempts).toHaveLength(1);
    const b = new Attempt(2, 'http://u/v1', at + 50, 0, true, w.text('{"sent":2}'));
    w.attempt(b);
    expect(w.upstreamAttempts.map((x) => x.n)).toEqual([1, 2]);
    expect(w.current).toBe(b);
  });

  it("headers kept as bytes in the arena: credentials never written there, read back as the request's", () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 10_000 });
    const w = ring.open(record('h'));
    const { text, chars } = redactedHeaderText({
      host: '127.0.0.1',
      authorization: 'Bearer sk-secret-123',
      'x-api-key': 'key-456',
      accept: ['a', 'b'],
      cookie: 'session=789',
      'x-nul': 'before\u0000after',
    });
    w.headers = w.encodedHeaders(text)!;
    expect(JSON.parse(JSON.stringify(w.clientRequest.headers))).toEqual({
      host: '127.0.0.1',
      authorization: '[redacted]',
      'x-api-key': '[redacted]',
      accept: 'a, b',
      cookie: '[redacted]',
      'x-nul': 'before',
    });
    // Counted at least at the length of their JSON (no escapes here).
    expect(chars).toBeGreaterThanOrEqual(JSON.stringify(w.clientRequest.headers).length);
    const arena = (ring as unknown as { arena: { buf: Buffer } }).arena.buf;
    for (const secret of ['sk-secret', 'key-456', 'session=789']) expect(arena.includes(secret)).toBe(false);
  });

  it("headers written into the arena as they are (headerPairs) read back as the text's, non-ASCII and credentials alike", () => {
    const headers = {
      host: '127.0.0.1',
      authorization: 'Bearer sk-secret-123',
      'x-title': 'caf\u00e9 \u00fcber',
      accept: ['a', 'b'],
      'proxy-authorization': 'Basic c2VjcmV0',
      'x-nul': 'before\u0000after',
    };
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 10_000 });
    const asText = ring.open(record('t'));
    const { text, chars } = redactedHeaderText(headers);
    // As keepClientRequest kept them before: counted (note), then written as one text.
    expect(asText.note(chars)).toBe(true);
    asText.headers = asText.encodedHeaders(text)!;
    const asPairs = ring.open(record('p'));
    const pairs: string[] = [];
    asPairs.headerPairs(pairs, redactedHeaderPairs(headers, pairs));
    expect(JSON.parse(JSON.stringify(asPairs.clientRequest.headers))).toEqual({
      host: '127.0.0.1',
      authorization: '[redacted]',
      'x-title': 'caf\u00e9 \u00fcber',
      accept: 'a, b',
      'proxy-authorization': '[redacted]',
      'x-nul': 'before',
    });
    expect(asPairs.clientRequest.headers).toEqual(asText.clientRequest.headers);
    // Counted alike: the same bytes a record.
    expect(asPairs.bytes).toBe(asText.bytes);
    expect(redactedHeaderPairs(headers, pairs)).toBe(chars);
    const arena = (ring as unknown as { arena: { buf: Buffer } }).arena.buf;
    for (const secret of ['sk-secret', 'c2VjcmV0']) expect(arena.includes(secret)).toBe(false);
    // Headers that could take more than a quarter of a small ring's arena, encoded: written as
    // one text instead (the path appendPairs declines), read back whole all the same.
    const many: Record<string, string> = {};
    for (let i = 0; i < 60; i++) many[`x-h${i}`] = `${i}`.padEnd(500, 'v');
    const small = new CaptureRing({ maxBytes: 512 * 1024, textChars: 100_000 });
    const big = small.open(record('b'));
    big.headerPairs(pairs, redactedHeaderPairs(many, pairs));
    expect(small.appendPairs(pairs)).toBe(false);
    expect(JSON.parse(JSON.stringify(big.clientRequest.headers))).toEqual(many);
    // A record with no room for them keeps none (and is not written past its share).
    const tiny = new CaptureRing({ maxBytes: 16 * 1024, textChars: 10_000 });
    const full = tiny.open(record('f'));
    full.headerPairs(['x-long', 'v'.repeat(8_000)], 8_020);
    expect(full.clientRequest.headers).toEqual({});
  });

  it('an effect kept as its fields reads as the EffectDecision of the effect itself', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 10_000 });
    const w = ring.open(record('e'));
    const effect = { policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'required' } };
    const call = {
      capture: w,
      trace: { attempts: 0 },
    } as unknown as Parameters<typeof captureEffects>[0];
    w.start = performance.now();
    captureEffects(call, [effect as never, { policy: 'force-tool-use', kind: 'tally', count: 2 } as never]);
    const [d, t] = w.decisions;
    expect(d).toBeInstanceOf(EffectDecision);
    expect(JSON.parse(JSON.stringify(d))).toEqual({
      ...JSON.parse(JSON.stringify(new EffectDecision(d!.atMs, 0, effect as never))),
    });
    expect(d!.detail).toBe('{"toolChoice":"required"}');
    expect(t!.kind).toBe('tally');
    expect(t!.detail).toBeUndefined();
  });

  it('small effects of one kind: equal ones share one copy, any other field or detail value reads as its own', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 10_000 });
    const decisionsOf = (effects: object[]) => {
      const w = ring.open(record(`x${Math.random()}`));
      const call = { capture: w, trace: { attempts: 1 } } as unknown as Parameters<typeof captureEffects>[0];
      w.start = performance.now();
      captureEffects(call, effects as never);
      return w.decisions as EffectDecision[];
    };
    const forced = (toolChoice: string, count = 1) => ({
      policy: 'force-tool-use',
      kind: 'forced',
      count,
      detail: { toolChoice },
    });
    const [a, b, c, d, e] = decisionsOf([
      forced('required'),
      forced('auto'),
      forced('required', 2),
      { policy: 'force-tool-use', kind: 'forced', count: 1 },
      { policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'required', extra: true } },
    ]);
    expect(a!.detail).toBe('{"toolChoice":"required"}');
    expect(b!.detail).toBe('{"toolChoice":"auto"}');
    expect((c!.effect as unknown as { count: number }).count).toBe(2);
    expect(d!.detail).toBeUndefined();
    expect(e!.detail).toBe('{"toolChoice":"required","extra":true}');
    // Another record's equal effect: the same frozen copy, read the same.
    const [again] = decisionsOf([forced('required')]);
    expect(again!.effect).toBe(a!.effect);
    expect(Object.isFrozen(again!.effect)).toBe(true);
    expect(again!.attempt).toBe(1);
    // A detail that is null or an array is never taken for a copy's plain object of the same fields.
    decisionsOf([
      { policy: 'p', kind: 'odd', detail: {} },
      { policy: 'p', kind: 'odd', detail: { 0: 'a' } },
    ]);
    const [nul, arr] = decisionsOf([
      { policy: 'p', kind: 'odd', detail: null },
      { policy: 'p', kind: 'odd', detail: ['a'] },
    ]);
    expect(nul!.detail).toBe('null');
    expect(arr!.detail).toBe('["a"]');
  });

  it('a constant effect (frozen, found by identity) reads as a fresh equal one, before and after the shared copies start afresh', () => {
    const ring = new CaptureRing({ maxBytes: 4 * 1024 * 1024, textChars: 10_000 });
    const decisionsOf = (effects: object[]) => {
      const w = ring.open(record(`k${Math.random()}`));
      const call = { capture: w, trace: { attempts: 1 } } as unknown as Parameters<typeof captureEffects>[0];
      w.start = performance.now();
      captureEffects(call, effects as never);
      return w.decisions as EffectDecision[];
    };
    const read = (d: EffectDecision) => {
      const { atMs: _, ...rest } = JSON.parse(JSON.stringify(d)) as Record<string, unknown>;
      return rest;
    };
    const constant = forcedEffect('required');
    const fresh = () => ({
      policy: 'force-tool-use',
      kind: 'forced',
      count: 1,
      detail: { toolChoice: 'required' },
    });
    const prose = forcedButProseEffect('auto');
    for (let round = 0; round < 2; round++) {
      const [c1, f1, p1] = decisionsOf([constant, fresh(), prose]);
      const [f2, c2] = decisionsOf([fresh(), constant]);
      for (const d of [f1, c2, f2]) expect(read(d!)).toEqual(read(c1!));
      expect(read(c1!)).toEqual({
        attempt: 1,
        kind: 'forced',
        policy: 'force-tool-use',
        reason:
          'forced tool use: tool_choice "required" sent upstream (a prose answer then comes through final_answer)',
        detail: '{"toolChoice":"required"}',
      });
      expect(read(p1!)).toMatchObject({ kind: 'forced-but-prose', detail: '{"toolChoice":"auto"}' });
      expect(c2!.effect).toBe(c1!.effect);
      // More distinct small effects than the shared copies keep: they start afresh.
      for (let r = 0; r < 22; r++)
        decisionsOf(
          Array.from({ length: 50 }, (_, i) => ({ policy: 'p', kind: `k${i % 40}`, count: r * 50 + i })),
        );
    }
    // A frozen effect whose detail can still change is not taken for a constant: read as it is now.
    const detail = { toolChoice: 'required' };
    const half = Object.freeze({ policy: 'force-tool-use', kind: 'forced', count: 1, detail });
    expect(decisionsOf([half])[0]!.detail).toBe('{"toolChoice":"required"}');
    detail.toolChoice = 'auto';
    expect(decisionsOf([half])[0]!.detail).toBe('{"toolChoice":"auto"}');
  });

  it('a text whose pieces wrap round the arena reads whole, then as cut once written over', () => {
    // A 64 KB arena: pieces of two records interleave across its end.
    const ring = new CaptureRing({ maxBytes: 128 * 1024, textChars: 64 * 1024 });
    for (let i = 0; i < 4; i++) {
      const filler = ring.open(record(`f${i}`));
      filler.client('f'.repeat(15_000));
      filler.endClient();
    }
    const arena = (ring as unknown as { arena: { lap: number } }).arena;
    expect(arena.lap).toBe(0);
    const a = ring.open(record('a'));
    const b = ring.open(record('b'));
    for (let i = 0; i < 6; i++) {
      a.client(`a${i}-${'x'.repeat(1000)}|`);
      b.client(`b${i}|`);
    }
    a.endClient();
    b.endClient();
    expect(arena.lap).toBe(1);
    const text = a.clientResponse.body;
    expect(text.text).toBe(Array.from({ length: 6 }, (_, i) => `a${i}-${'x'.repeat(1000)}|`).join(''));
    expect(b.clientResponse.body.text).toBe('b0|b1|b2|b3|b4|b5|');
    for (let i = 0; i < 30; i++) {
      const w = ring.open(record(`n${i}`));
      w.client('z'.repeat(4000));
      w.endClient();
    }
    expect(text.text).toBe('');
    expect(text.cut).toBe(6 * 1004);
  });
});

describe("an attempt's body kept as the client's bytes it begins with, and its own rest", () => {
  // A client body as an agent sends one (non-ASCII included), and the body a policy that
  // appends makes of it: forced tool use adds final_answer after the tools, then tool_choice.
  const client = Buffer.from(
    JSON.stringify({
      model: 'm',
      messages: Array.from({ length: 40 }, (_, i) => ({
        role: 'user',
        content: `turn ${i}: café 日本 🙂 ${'x'.repeat(50)}`,
      })),
      tools: [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }],
    }),
  );
  const appended = Buffer.concat([
    client.subarray(0, client.length - 2),
    Buffer.from(
      ',{"type":"function","function":{"name":"final_answer","description":"Réponse"}}],"tool_choice":"required"}',
    ),
  ]);
  const withBody = (ring: CaptureRing, id: string, body: Buffer) => {
    const w = ring.open(record(id));
    w.body = w.fromBytes(body);
    return w;
  };

  it('finds the first byte that differs wherever it is (commonPrefix against a naive scan)', () => {
    const rand = prng(7);
    const arena = Buffer.alloc(200_000, 0x61);
    for (let k = 0; k < 300; k++) {
      const len = 1 + Math.floor(rand() * 60_000);
      const off = Math.floor(rand() * (arena.length - len));
      const b = Buffer.from(arena.subarray(off, off + len));
      const at = rand() < 0.2 ? len : Math.floor(rand() * len);
      if (at < len) b[at] = 0x62;
      const blen = rand() < 0.2 ? Math.floor(rand() * len) : len;
      expect(commonPrefix(arena, off, len, b.subarray(0, blen))).toBe(Math.min(at, blen));
    }
  });

  it('reads back byte for byte, and the record is charged for the rest only', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = withBody(ring, 'a', client);
    const before = w.bytes;
    const a = w.attemptOf(1, 'u', Date.now(), 0, true, appended);
    expect(a.request.text).toBe(appended.toString('utf8'));
    expect(a.request.cut).toBe(0);
    expect(JSON.parse(JSON.stringify(a)).request).toEqual({ text: appended.toString('utf8'), cut: 0 });
    const rest = appended.length - (client.length - 2);
    expect(w.bytes - before).toBeLessThan(4 * rest);
    expect(w.bytes - before).toBeGreaterThan(0);
  });

  it("a body no policy rewrote is the client's bytes alone: nothing copied, nothing charged", () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = withBody(ring, 'a', client);
    const before = w.bytes;
    const a = w.attemptOf(1, 'u', Date.now(), 0, true, Buffer.from(client));
    expect(a.request.text).toBe(client.toString('utf8'));
    expect(w.bytes).toBe(before);
    expect(w.inArena()).toBe(true);
  });

  it('a head cut inside a character (the bytes differ there) reads as the bytes sent', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = withBody(ring, 'a', client);
    // 'é' is C3 A9; 'è' is C3 A8: the shared head ends between the two bytes of one character.
    const at = client.indexOf('café') + 4;
    const sent = Buffer.concat([client.subarray(0, at), Buffer.from([0xa8]), client.subarray(at + 1)]);
    expect(client[at - 1]).toBe(0xc3);
    const a = w.attemptOf(1, 'u', Date.now(), 0, true, sent);
    expect(a.request.text).toBe(sent.toString('utf8'));
    expect(a.request.text).toContain('cafè');
  });

  it('a body that differs early, or a client body kept cut, is copied whole as before', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = withBody(ring, 'a', client);
    const early = Buffer.from(client.toString('utf8').replace('"model":"m"', '"model":"upstream-name"'));
    const before = w.bytes;
    expect(w.attemptOf(1, 'u', Date.now(), 0, true, early).request.text).toBe(early.toString('utf8'));
    expect(w.bytes - before).toBeGreaterThanOrEqual(2 * early.length);
    const small = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 2000 });
    const cut = withBody(small, 'b', client);
    expect(cut.body.cut).toBe(client.length - 2000);
    const a = cut.attemptOf(1, 'u', Date.now(), 0, true, appended);
    expect(a.request).toMatchObject({
      text: appended.subarray(0, 2000).toString('utf8'),
      cut: appended.length - 2000,
    });
  });

  it("reads as cut once the arena wrote over the client's bytes, never as another record's", () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 8192 });
    const body = Buffer.from(`{"messages":"${'m'.repeat(3000)}"}`);
    const w = withBody(ring, 'old', body);
    const sent = Buffer.concat([
      body.subarray(0, body.length - 1),
      Buffer.from(',"tool_choice":"required"}'),
    ]);
    const request = w.attemptOf(1, 'u', Date.now(), 0, true, sent).request;
    expect(request.text).toBe(sent.toString('utf8'));
    for (let i = 0; i < 40; i++) {
      const n = ring.open(record(`n${i}`));
      n.client('z'.repeat(4000));
      n.endClient();
    }
    expect(w.evicted).toBe(true);
    expect(request.text).toBe('');
    expect(request.cut).toBe(sent.length);
  });
});

describe('records reused once evicted (issue 28: capture CPU)', () => {
  const FILLER = { key: 'k-written' };
  /**
   * A record as the server writes one: every text in the arena, an attempt, decisions, an end.
   * Of the key the fillers below have too: a full ring gives up the oldest record of the key
   * holding the most, which the fillers' key would be were it another.
   */
  const written = (ring: CaptureRing, id: string, at: number): RecordWriter => {
    const w = ring.open({ ...record(id, `s-${id}`, `m-${id}`), at, key: FILLER.key });
    const headers = w.encodedHeaders(redactedHeaderText({ 'x-from': id, authorization: 'Bearer sk' }).text);
    if (headers) w.headers = headers;
    w.body = w.fromBytes(Buffer.from(`{"client":"${id}"}`));
    w.start = 1;
    const a = w.newAttempt(
      1,
      `http://${id}/v1`,
      at + 5,
      1.5,
      true,
      w.fromBytes(Buffer.from(`{"sent":"${id}"}`)),
    );
    a.status = 201;
    a.replica = `replica-${id}`;
    a.ttfbMs = 3;
    a.error = { code: 'X', status: 502, message: `failed ${id}` };
    w.read(Buffer.from(`data: {"from":"${id}"}\n\n`), 1);
    w.endEvents();
    w.client(`data: {"to":"${id}"}\n\n`);
    w.endClient(200);
    w.decision({ atMs: 1, attempt: 1, kind: `kind-${id}`, reason: `reason ${id}` });
    w.harness = { forced: true, note: id };
    w.setTokens(1, 2, 3);
    w.error = { code: 'E', status: 500, message: id };
    w.kinds = ['failed'];
    w.outcome = 'failed';
    w.status = 500;
    w.durationMs = 12;
    w.inFlight = false;
    return w;
  };

  it('a record evicted once it ended reads, reused, as a new record: nothing of the request it was', () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    const first = written(ring, 'old', 1_764_888_000_000);
    const firstAttempt = first.current!;
    const before = JSON.stringify(first);
    expect(before).toContain('old');
    // Others fill the ring until the first is evicted.
    for (let i = 0; !first.evicted; i++) ring.open({ ...record(`fill${i}`), ...FILLER }).note(4000);
    // Waiting to be reused, it holds nothing of that request (no text, word, decision or summary).
    expect(JSON.stringify(first)).not.toContain('old');
    expect(JSON.stringify(firstAttempt)).not.toContain('old');
    const reused = ring.open({ ...record('new'), at: 1_764_888_001_000 });
    expect(reused).toBe(first);
    const fresh = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 }).open({
      ...record('new'),
      at: 1_764_888_001_000,
    });
    expect(JSON.stringify(reused)).toBe(JSON.stringify(fresh));
    expect(JSON.stringify(reused)).not.toContain('old');
    expect(reused.evicted).toBe(false);
    expect(reused.bytes).toBe(fresh.bytes);
    // Its first attempt's object too, every field set anew.
    const a = reused.newAttempt(1, 'http://new/v1', 1_764_888_001_005, 0, false, reused.text('{}'));
    expect(a).toBe(firstAttempt);
    const b = new Attempt(1, 'http://new/v1', 1_764_888_001_005, 0, false, { text: '{}', cut: 0 });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });

  it('finds a record by its id only while the ring holds it: not once evicted, nor by the id of the request its object served before', () => {
    // The ring indexes ids when it is read, not per request (capfixed): the index's entries of
    // records gone since must find nothing.
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    const old = written(ring, 'old', 1_764_888_000_000);
    expect(ring.get('old')).toBe(old);
    for (let i = 0; !old.evicted; i++) ring.open({ ...record(`fill${i}`), ...FILLER }).note(4000);
    expect(ring.get('old')).toBeUndefined();
    const reused = ring.open(record('new'));
    expect(reused).toBe(old);
    expect(ring.get('old')).toBeUndefined();
    expect(ring.get('new')).toBe(reused);
    expect(ring.list({ limit: 1000 }).map((r) => r.id)).not.toContain('old');
  });

  it('a reused id read after many requests: the newest has it, every earlier one a suffix of its own; the index stays about the size of the ring', () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    let newest: RecordWriter | undefined;
    for (let i = 0; i < 3000; i++) {
      const w = ring.open(record(i % 3 === 0 ? 'dup' : `r${i}`));
      w.note(200);
      w.inFlight = false;
      if (i % 3 === 0) newest = w;
      if (i % 97 === 0) ring.list();
    }
    expect(ring.get('dup')).toBe(newest);
    const ids = ring.list({ limit: 1000 }).map((r) => r.id);
    expect(ids.length).toBe(ring.size);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) if (id.startsWith('dup') && id !== 'dup') expect(id).toMatch(/^dup~\d+$/);
    for (const id of ids) expect(ring.get(id)?.id).toBe(id);
    const index = (ring as unknown as { records: Map<string, unknown> }).records;
    expect(index.size).toBeLessThanOrEqual(2 * ring.size + 64);
  });

  it('a record evicted in flight, or holding texts of its own on the heap, is not reused', () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    const inFlight = written(ring, 'a', 1);
    inFlight.inFlight = true;
    const onHeap = written(ring, 'b', 2);
    onHeap.body = onHeap.text('{"kept":"as a string"}');
    for (let i = 0; !onHeap.evicted; i++) ring.open({ ...record(`fill${i}`), ...FILLER }).note(4000);
    const next = ring.open(record('c'));
    expect(next).not.toBe(inFlight);
    expect(next).not.toBe(onHeap);
    // What they hold stays theirs (their requests may still read or write them).
    expect(onHeap.body.text).toBe('{"kept":"as a string"}');
  });

  it("an inspector answer is the record as it read then, whatever the ring's reuse does after", () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    written(ring, 'seen', 1_764_888_000_000);
    const view = answer(ring, { op: 'get', id: 'seen' }, 0) as { record: CaptureRecord };
    const turns = answer(ring, { op: 'session', key: 's-seen' }, 0) as CaptureRecord[];
    const then = JSON.stringify(view.record);
    const thenTurns = JSON.stringify(turns);
    for (let i = 0; ring.get('seen') !== undefined; i++)
      ring.open({ ...record(`fill${i}`), ...FILLER }).note(4000);
    written(ring, 'other', 1_764_888_002_000);
    expect(JSON.stringify(view.record)).toBe(then);
    expect(JSON.stringify(turns)).toBe(thenTurns);
  });
});

describe('the harness summary kept as a shared copy and its numbers (issue 28: capture CPU)', () => {
  const summary = (queuedMs: number, cached: number | undefined, extra: Record<string, unknown> = {}) => ({
    forced: true,
    toolChoice: 'required',
    attempts: 1,
    leaks: [],
    cachedTokens: cached,
    promptTokens: cached === undefined ? undefined : 100,
    discardedTokens: undefined,
    ...extra,
    queuedMs,
    final: 'final_answer',
  });

  it('reads back as the summary given, its key order included, for equal and different summaries', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    const cases = [
      summary(0, undefined),
      summary(1.3, 7),
      summary(2.7, 0, { key: 'team' }),
      summary(0.1, 7, { leaks: [{ format: 'hermes' }] }),
      summary(1.25, 7),
    ];
    for (const [i, h] of cases.entries()) {
      const w = ring.open(record(`h${i}`));
      const call = {
        capture: w,
        trace: {
          droppedTools: undefined,
          retries: [],
          leaks: [],
          validationFailures: [],
          unenforced: [],
          attempts: 1,
        },
      } as never;
      finishCapture(call, 200, true, undefined, undefined, { ...h }, undefined);
      expect(JSON.stringify(w.harness)).toBe(JSON.stringify(h));
      expect(JSON.parse(JSON.stringify(w)).harness).toEqual(JSON.parse(JSON.stringify(h)));
    }
  });
});

describe("a plain trace's harness summary found without making it (issue 28: capture CPU)", () => {
  // Every field harnessOf reads, set one way or another: plain traces (hit or learned) and others.
  const traces: Array<[string, (t: HarnessTrace, call: { discardedTokens: number }) => void]> = [
    ['new', () => {}],
    [
      'forced',
      (t) => Object.assign(t, { forced: true, toolChoiceSent: 'required', finalKind: 'final_answer' }),
    ],
    [
      'forced, queued',
      (t) => Object.assign(t, { forced: true, toolChoiceSent: 'required', queuedMs: 12.34 }),
    ],
    ['keyed', (t) => Object.assign(t, { key: 'team', priority: 'interactive', servedBy: 'big' })],
    ['schema', (t) => Object.assign(t, { schemaAnswer: 'valid', fallback: true, attempts: 2 })],
    ['discarded', (_, call) => Object.assign(call, { discardedTokens: 17 })],
    ['odd queue', (t) => Object.assign(t, { queuedMs: 1e12 })],
    ['leak', (t) => t.leaks.push({ format: 'hermes', source: 'content', outcome: 'recovered' })],
    ['retry', (t) => t.retries.push({ reason: 'invalid', outcome: 'ok' })],
    ['repair', (t) => Object.assign(t.repairs, { 'orphan-result': 1 })],
    ['normalized', (t) => Object.assign(t.normalizations, { x: 2 })],
    ['constrained', (t) => Object.assign(t.constraints, { 'forbidden-call': 1 })],
    ['final problem', (t) => Object.assign(t.finalAnswerProblems, { invalid: 1 })],
    ['validation', (t) => t.validationFailures.push({ tool: 'get_weather' })],
    ['unenforced', (t) => t.unenforced.push({ tool: 'get_weather', reasons: ['pattern'] })],
    ['dropped', (t) => Object.assign(t, { droppedTools: ['web_search'] })],
    ['dropped none', (t) => Object.assign(t, { droppedTools: [] })],
    ['degraded', (t) => Object.assign(t.degraded, { 'image-note': 1 })],
    ['route fallback', (t) => Object.assign(t, { routeFallbacks: [{ from: 'a', to: 'b', reason: 'r' }] })],
    ['refused', (t) => Object.assign(t, { refused: ['images'] })],
    ['resent after a cut', (t) => Object.assign(t, { resentAfterCut: true })],
  ];
  const caches = [undefined, { cached: 0, prompt: 100 }, { cached: 64, prompt: 120 }];

  it("reads back as harnessOf's summary, key order included, whether found or made", () => {
    const ring = new CaptureRing({ maxBytes: 4 * 1024 * 1024, textChars: 1000 });
    let n = 0;
    // Twice over: the first pass learns the plain traces' copies, the second finds them.
    for (let pass = 0; pass < 2; pass++)
      for (const [name, set] of traces)
        for (const cache of caches) {
          const w = ring.open(record(`p${n++}`));
          const call = { capture: w, trace: newTrace(), discardedTokens: 0 } as unknown as ChatCall;
          set(call.trace, call as never);
          const expected = JSON.stringify(harnessOf(call, cache));
          finishCapture(call, 200, true, undefined, cache, harnessOf, undefined);
          expect(JSON.stringify(w.harness), `${name}, pass ${pass}`).toBe(expected);
          expect(JSON.stringify(JSON.parse(JSON.stringify(w)).harness), name).toBe(expected);
        }
  });

  it("is found for harnessOf's own summary: a plain trace's summary made once, not per request", () => {
    // harnessOf grew fields (refused, resentAfterCut) the list did not name: nothing was learned,
    // and every request made the summary and walked it (~10 µs a short stream, issue 28).
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    let made = 0;
    const counted = (
      c: Pick<ChatCall, 'trace' | 'discardedTokens'>,
      cache: { cached: number; prompt: number } | undefined,
    ) => {
      made++;
      return harnessOf(c, cache);
    };
    for (let i = 0; i < 4; i++) {
      const w = ring.open(record(`h${i}`));
      const call = { capture: w, trace: newTrace(), discardedTokens: 0 } as unknown as ChatCall;
      Object.assign(call.trace, { forced: true, toolChoiceSent: 'required', finalKind: 'final_answer' });
      const expected = JSON.stringify(harnessOf(call, { cached: 0, prompt: 100 }));
      finishCapture(call, 200, true, undefined, { cached: 0, prompt: 100 }, counted, undefined);
      expect(JSON.stringify(w.harness)).toBe(expected);
    }
    expect(made).toBe(1);
  });

  it('is not used once the summary has a field it does not know', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    const grown = (
      c: Pick<ChatCall, 'trace' | 'discardedTokens'>,
      cache: { cached: number; prompt: number } | undefined,
    ) => ({
      ...harnessOf(c, cache),
      added: 'x',
    });
    for (let i = 0; i < 3; i++) {
      const w = ring.open(record(`g${i}`));
      const call = { capture: w, trace: newTrace(), discardedTokens: 0 } as unknown as ChatCall;
      finishCapture(call, 200, true, undefined, undefined, grown, undefined);
      expect(w.harness?.added).toBe('x');
    }
  });
});

describe('a session of the opening messages worked out when read, not per request (issue 28: capture CPU)', () => {
  const opening = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'x'.repeat(3000) },
  ];
  // A run's later turn: the model's first reply carried back marks the run (runs.ts).
  const reply = {
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'call_7', type: 'function', function: { name: 'ls', arguments: '{}' } }],
  };
  const chat = {
    model: 'm',
    messages: [...opening, reply, { role: 'tool', tool_call_id: 'call_7', content: 'a.txt' }],
  };
  const first = { model: 'm', messages: opening };
  const begin = (
    ring: CaptureRing,
    api: string,
    headers: Record<string, string> = {},
    body: unknown = chat,
  ) => {
    const bytes = Buffer.from(JSON.stringify(body));
    const request = {
      id: `r${Math.random()}`,
      method: 'POST',
      url: '/v1/chat/completions',
      headers,
      body: JSON.parse(bytes.toString()),
      tpStart: performance.now(),
    };
    const call = { api, original: request.body, trace: { attempts: 0 } } as unknown as ChatCall;
    beginCapture(ring, request as never, call, undefined, bytes);
    return call.capture as RecordWriter;
  };
  const later = (w: RecordWriter) => (w as unknown as { sessionLater: number }).sessionLater;
  const openingLabel = sessionLabel(affinityKey({}, chat, chat as never));
  const expected = `${openingLabel}/${runOfHistory(chat.messages)}`;

  it("the chat door's body kept whole: read from it when asked, then kept", () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = begin(ring, 'chat');
    expect(later(w)).toBe(1);
    expect(ring.list()[0]!.session).toBe(expected);
    expect(later(w)).toBe(0);
    expect(JSON.parse(JSON.stringify(w)).session).toBe(expected);
  });

  it('any other door, a body cut, or a session the client names: the key at once', () => {
    const other = begin(new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 }), 'messages');
    expect(later(other)).toBe(0);
    expect(other.session).toBe(expected);
    const cut = begin(new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 }), 'chat');
    expect(later(cut)).toBe(0);
    expect(cut.session).toBe(expected);
    const named = begin(new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 }), 'chat', {
      'x-claude-code-session-id': 'abc',
    });
    expect(later(named)).toBe(0);
    expect(named.session).toBe('h:abc');
  });

  it("a run's first request in flight: the opening's label for now, its run read once it ended", () => {
    for (const api of ['chat', 'messages']) {
      const w = begin(new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 }), api, {}, first);
      expect(w.session).toBe(openingLabel);
      expect(later(w)).toBe(2);
    }
  });

  it('a failed first request finds its retry among the next 64 records, and waits while it is in flight', () => {
    const ring = new CaptureRing({ maxBytes: 8 * 1024 * 1024, textChars: 64 * 1024 });
    const end = (w: RecordWriter, status: number, reply?: string) => {
      if (reply !== undefined) w.client(reply);
      const call = { capture: w, trace: newTrace(), discardedTokens: 0 } as unknown as ChatCall;
      finishCapture(call, status, true, undefined, undefined, undefined, undefined);
    };
    const failed = begin(ring, 'chat', {}, first);
    end(failed, 500);
    const retry = begin(ring, 'chat', {}, first);
    // Another task's requests after it: the window is full before the retry ends.
    for (let i = 0; i < 70; i++)
      end(
        begin(ring, 'chat', {}, { model: 'm', messages: [{ role: 'user', content: `other ${i}` }] }),
        200,
        `x${i}`,
      );
    const alone = `${openingLabel}/${ownRun(failed.id)}`;
    expect(failed.session).toBe(alone);
    expect(later(failed)).toBe(2);
    expect(retry.session).toBe(openingLabel);
    const call = { id: 'call_R', type: 'function', function: { name: 'ls', arguments: '{}' } };
    end(
      retry,
      200,
      JSON.stringify({ choices: [{ index: 0, message: { content: null, tool_calls: [call] } }] }),
    );
    const run = `${openingLabel}/${runOfHistory([{ role: 'assistant', tool_calls: [call] }])}`;
    expect(failed.session).toBe(run);
    expect(later(failed)).toBe(3);
    expect(retry.session).toBe(run);
  });

  it("a record reused after a deferred session has the new request's", () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 64 * 1024 });
    const w = begin(ring, 'chat');
    w.reset(record('next', 'given'));
    expect(w.session).toBe('given');
  });
});
