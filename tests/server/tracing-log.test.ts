/**
 * server/tracing/span-log.ts: ended spans kept as records in one byte log until their export,
 * made into spans a batch at a time. What it must keep: the spans (the bytes the library's
 * serializers write, protobuf and JSON, for the same spans built directly), the SDK's span limits,
 * and the batch processor's rules (OTEL_BSP_*: a full queue drops, a full batch goes at once, else
 * after the delay, one export at a time, a hung export given up after its timeout, forceFlush in
 * batches, nothing after shutdown); and its cost per span stays linear in what a span holds.
 */
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { type LeanLimits, type LeanSpan, LeanTracer, leanSpanOf } from '../../server/tracing/lean.js';
import { EncodedSpan, serializeSpans } from '../../server/tracing/otlp-proto.js';
import { type LogSettings, SpanLog } from '../../server/tracing/span-log.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const LIMITS: LeanLimits = {
  attributeValueLength: 65536,
  attributeCount: 128,
  eventCount: 128,
  attributePerEventCount: 128,
};

function tracerOf(limits: Partial<LeanLimits> = {}): { tracer: LeanTracer; ended: LeanSpan[] } {
  const ended: LeanSpan[] = [];
  const tracer = new LeanTracer(
    resourceFromAttributes({ 'service.name': 'toolproof', 'process.pid': 4242 }),
    { name: 'toolproof', version: undefined, schemaUrl: undefined },
    new AlwaysOnSampler(),
    {
      onStart() {},
      onEnd: (s: ReadableSpan) => ended.push(s as LeanSpan),
      forceFlush: async () => {},
      shutdown: async () => {},
    },
    { ...LIMITS, ...limits },
  );
  return { tracer, ended };
}

interface Capture {
  exporter: SpanExporter;
  batches: ReadableSpan[][];
  /** Exports not answered yet (a hung collector): answer them by hand. */
  pending: Array<(code: ExportResultCode) => void>;
  shutdowns: number;
}

function capture(answer: 'now' | 'never' = 'now'): Capture {
  const c: Capture = {
    batches: [],
    pending: [],
    shutdowns: 0,
    exporter: {
      export(spans, done) {
        // Encoded spans' bytes are the log's until the export returns (the exporter copies them
        // out at once): kept as copies of their own.
        c.batches.push(
          spans.map((s) =>
            s instanceof EncodedSpan
              ? (new EncodedSpan(
                  Buffer.from(s.bytes.subarray(s.start, s.end)),
                  0,
                  s.end - s.start,
                  s.traceFlags,
                  s.resource,
                  s.instrumentationScope,
                  s.slab,
                ) as unknown as ReadableSpan)
              : s,
          ),
        );
        if (answer === 'now') done({ code: ExportResultCode.SUCCESS });
        else c.pending.push((code) => done({ code }));
      },
      shutdown: async () => {
        c.shutdowns++;
      },
    },
  };
  return c;
}

/** A span as sdk.ts writes one: its fields, attributes, events and status, in the log's calls. */
function write(log: SpanLog, s: LeanSpan): void {
  const parent = s.parentSpanContext;
  log.open(
    s.kind,
    s.traceFlags,
    s.traceId,
    s.spanId,
    parent?.spanId,
    parent?.isRemote === true,
    s.traceState,
    s.name,
    s.startMs,
    s.endMs,
  );
  const attrs = s.attrs ?? [];
  for (let i = 0; i < 2 * s.attributeCount; i += 2)
    log.setAttribute(attrs[i] as string, attrs[i + 1] as never);
  for (const e of s.leanEvents ?? []) log.event(e.name, e.ms, e.attributes);
  if (s.statusCode !== SpanStatusCode.UNSET) log.status(s.statusCode, s.statusMessage);
  log.close();
}

/** `s` made again by `tracer` (its limits), as the span log's export makes it. */
function leanCopy(tracer: LeanTracer, s: LeanSpan): LeanSpan {
  const copy = leanSpanOf(
    tracer,
    s.name,
    s.kind,
    s.traceId,
    s.spanId,
    s.traceFlags,
    s.traceState,
    s.parentSpanContext,
    s.startMs,
  );
  if (s.name === 'twice') return copy; // its calls are the test's
  const attrs = s.attrs ?? [];
  for (let i = 0; i < 2 * s.attributeCount; i += 2)
    copy.setAttribute(attrs[i] as string, attrs[i + 1] as never);
  for (const e of s.leanEvents ?? []) copy.addEvent(e.name, e.attributes, e.ms);
  if (s.statusCode !== SpanStatusCode.UNSET) copy.setStatus(s.status);
  copy.endAt(s.endMs);
  return copy;
}

/** A request's spans, with the wire format's edge cases (as tracing-lean.test.ts's). */
function requestSpans(tracer: LeanTracer): void {
  const parent = {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: new TraceState('vendor=1,other=abc'),
  };
  const server = tracer.start('POST /v1/chat/completions', SpanKind.SERVER, undefined, parent);
  server.setAttribute('http.request.method', 'POST');
  server.setAttribute('gen_ai.request.model', 'qwen3-coder');
  server.setAttribute('gen_ai.request.temperature', 0.2);
  server.setAttribute('gen_ai.usage.input_tokens', 1200);
  server.setAttribute('gen_ai.request.stream', true);
  server.setAttribute('toolproof.disabled', false);
  server.setAttribute('user_agent.original', 'claude-cli/2.0.0 (external, cli) — ünïcødé 🚀');
  server.setAttribute('ünïcødé.key', 'v');
  server.setAttribute('k'.repeat(300), 'a long key');
  server.addEvent('toolproof.forced', { 'toolproof.policy': 'force-tool-use', 'toolproof.attempt': 1 });
  server.addEvent('toolproof.leak', { 'toolproof.leak.format': 'hermes', 'toolproof.reasons': ['a', 'b'] });
  server.addEvent('toolproof.final_answer');
  server.addEvent('événement ✓', { n: 1, ok: false });
  const attempt = tracer.start('chat qwen3-coder', SpanKind.CLIENT, undefined, server);
  attempt.setAttribute('gen_ai.response.finish_reasons', ['tool_calls', 'stop']);
  attempt.setAttribute('server.port', 8000);
  attempt.setAttribute('toolproof.upstream.headers_ms', 12.5);
  attempt.setAttribute('big', 2 ** 40 + 3);
  attempt.setAttribute('neg', -5);
  attempt.setAttribute('nums', [1, -2, 3.5]);
  attempt.setAttribute('bools', [true, false]);
  attempt.setAttribute('empty', '');
  attempt.setAttribute('medium', 'm'.repeat(300));
  attempt.setAttribute('long', 'é'.repeat(20_000));
  attempt.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream said 500 ✗' });
  attempt.end();
  server.setStatus({ code: SpanStatusCode.ERROR, message: '' });
  server.end();
  const root = tracer.start('GET /v1/models', SpanKind.INTERNAL, undefined, undefined);
  root.setStatus({ code: SpanStatusCode.OK });
  root.end();
}

const SMALL: Partial<LogSettings> = {
  maxQueueSize: 4,
  maxExportBatchSize: 2,
  scheduledDelayMillis: 40,
  exportTimeoutMillis: 200,
};
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** One short span into `log`. */
function one(log: SpanLog, tracer: LeanTracer, name = 'span'): void {
  const s = tracer.start(name, SpanKind.SERVER, undefined, undefined);
  s.end();
  write(log, s);
}

describe('the span log', () => {
  it('exports the spans written into it: the bytes the library writes for them, protobuf and JSON', async () => {
    const { tracer, ended } = tracerOf();
    const c = capture();
    const log = new SpanLog(c.exporter, tracer, { maxExportBatchSize: 512, maxQueueSize: 2048 });
    requestSpans(tracer);
    expect(ended).toHaveLength(3);
    for (const s of ended) write(log, s);
    expect(log.queued).toBe(3);
    await log.forceFlush();
    expect(log.queued).toBe(0);
    const got = c.batches.flat();
    expect(got).toHaveLength(3);
    const want = Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!);
    expect(Buffer.from(ProtobufTraceSerializer.serializeRequest(got)!).equals(want)).toBe(true);
    expect(Buffer.from(serializeSpans(got)).equals(want)).toBe(true);
    expect(Buffer.from(JsonTraceSerializer.serializeRequest(got)!).toString()).toBe(
      Buffer.from(JsonTraceSerializer.serializeRequest(ended)!).toString(),
    );
    // A full batch of 512 goes as soon as it is there, in the order written.
    ended.length = 0;
    while (ended.length < 512) requestSpans(tracer);
    const first = ended.slice(0, 512);
    for (const s of first) write(log, s);
    expect(c.batches).toHaveLength(2);
    expect(
      Buffer.from(serializeSpans(c.batches[1]!)).equals(
        Buffer.from(ProtobufTraceSerializer.serializeRequest(first)!),
      ),
    ).toBe(true);
    await log.shutdown();
  });

  it('with the protobuf exporter, writes a batch straight into the same bytes (a record the limits would trim: through a LeanSpan)', async () => {
    for (const limits of [
      {},
      { attributeCount: 4 },
      { eventCount: 1 },
      { attributePerEventCount: 0 },
      { attributeValueLength: 10 },
    ]) {
      const { tracer, ended } = tracerOf();
      const c = capture();
      const log = new SpanLog(
        c.exporter,
        tracerOf(limits).tracer,
        { maxExportBatchSize: 512, maxQueueSize: 4096 },
        true,
      );
      while (ended.length < 600) requestSpans(tracer);
      // A key written twice (the first place, the last value), and a status set twice.
      const twice = leanSpanOf(
        tracer,
        'twice',
        SpanKind.SERVER,
        'ab'.repeat(16),
        'cd'.repeat(8),
        1,
        undefined,
        undefined,
        1,
      );
      for (const s of ended) write(log, s);
      log.open(SpanKind.SERVER, 1, twice.traceId, twice.spanId, undefined, false, undefined, 'twice', 1, 2);
      log.setAttribute('a', 'first');
      log.setAttribute('b', 2);
      log.setAttribute('a', 'second');
      log.status(SpanStatusCode.ERROR, 'one');
      log.status(SpanStatusCode.OK, undefined);
      log.close();
      await log.forceFlush();
      const got = c.batches.flat();
      expect(got).toHaveLength(ended.length + 1);
      // The same spans made by a LeanTracer with these limits, through the library's serializer.
      const { tracer: limited, ended: again } = tracerOf(limits);
      for (const s of [...ended]) {
        const copy = leanCopy(limited, s);
        again.push(copy);
      }
      const t = leanCopy(limited, twice);
      t.setAttribute('a', 'first');
      t.setAttribute('b', 2);
      t.setAttribute('a', 'second');
      t.setStatus({ code: SpanStatusCode.ERROR, message: 'one' });
      t.setStatus({ code: SpanStatusCode.OK });
      t.endAt(2);
      again.push(t);
      for (let i = 0; i < again.length; i++) {
        const one = Buffer.from(serializeSpans([got[i]!]));
        const other = Buffer.from(ProtobufTraceSerializer.serializeRequest([again[i]!])!);
        if (!one.equals(other))
          throw new Error(
            `${JSON.stringify(limits)} span ${i} ${again[i]!.name}: ${one.toString('hex')} != ${other.toString('hex')}`,
          );
      }
      const want = Buffer.from(ProtobufTraceSerializer.serializeRequest(again)!);
      expect(Buffer.from(serializeSpans(got)).equals(want), JSON.stringify(limits)).toBe(true);
      // Without limits to apply, only what needs the SDK's rules went through a LeanSpan: the
      // server spans (a key past 256 characters), the attempts (arrays of numbers and booleans)
      // and the key written twice; the root spans were written straight.
      if (Object.keys(limits).length === 0) expect(log.throughLeanSpans).toBe((2 * ended.length) / 3 + 1);
      await log.shutdown();
    }
  });

  it("with the protobuf exporter, writes a request's spans as sdk.ts makes them straight into the library's bytes", async () => {
    const { tracer, ended } = tracerOf();
    const c = capture();
    const log = new SpanLog(c.exporter, tracer, { maxExportBatchSize: 512, maxQueueSize: 4096 }, true);
    const parent = {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
      traceState: new TraceState('vendor=1'),
    };
    for (let i = 0; i < 300; i++) {
      const server = tracer.start(
        'POST /v1/chat/completions',
        SpanKind.SERVER,
        undefined,
        i % 2 ? parent : undefined,
      );
      const attempt = tracer.start('chat qwen3-coder', SpanKind.CLIENT, undefined, server);
      for (const [k, v] of [
        ['gen_ai.operation.name', 'chat'],
        ['gen_ai.provider.name', 'openai'],
        ['gen_ai.request.model', `qwen3-coder-${i % 3}`],
        ['gen_ai.request.max_tokens', 1024 + i],
        ['gen_ai.request.temperature', 0.2],
        ['toolproof.attempt', 1],
        ['server.address', 'gpu-a'],
        ['server.port', 8000],
        ['toolproof.tool_choice', 'required'],
        ['http.response.status_code', 200],
        ['toolproof.upstream.headers_ms', 12.5 + i],
        ['gen_ai.usage.input_tokens', 2 ** 40 + i],
        ['gen_ai.response.id', `chatcmpl-${i}-${'x'.repeat(i % 200)}`],
        ['gen_ai.response.finish_reasons', ['tool_calls']],
        ['gen_ai.response.model', 'qwen3-coder ünïcødé'],
      ] as const)
        attempt.setAttribute(k, v as never);
      attempt.end();
      for (const [k, v] of [
        ['http.request.method', 'POST'],
        ['url.path', '/v1/chat/completions'],
        ['user_agent.original', `agent/${i % 5} ${'u'.repeat(i % 130)}`],
        ['gen_ai.request.stream', true],
        ['toolproof.fallback', i % 7 === 0],
        ['toolproof.request_id', `req-${i}`],
        ['toolproof.final_kind', 'tool_calls'],
        ['error.type', 'client_aborted'],
      ] as const)
        server.setAttribute(k, v as never);
      server.addEvent('toolproof.forced', {
        'toolproof.policy': 'force-tool-use',
        'toolproof.attempt': 0,
        'toolproof.tool_choice': 'required',
      });
      server.addEvent('toolproof.schema_unenforced', {
        'toolproof.tool': 'write',
        'toolproof.reasons': ['a', 'b'],
      });
      server.addEvent('toolproof.final_answer', {});
      if (i % 3 === 0)
        server.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection first' });
      server.end();
    }
    for (const s of ended) write(log, s);
    await log.forceFlush();
    expect(log.throughLeanSpans).toBe(0);
    const got = c.batches.flat();
    expect(got).toHaveLength(600);
    const want = [ended.slice(0, 512), ended.slice(512)].map((b) =>
      Buffer.from(ProtobufTraceSerializer.serializeRequest(b)!),
    );
    const mine = [got.slice(0, 512), got.slice(512)].map((b) => Buffer.from(serializeSpans(b)));
    expect(mine[0]!.equals(want[0]!)).toBe(true);
    expect(mine[1]!.equals(want[1]!)).toBe(true);
    await log.shutdown();
  });

  it('a full dictionary starts again: a pair written after it is its own value, not the one cached before (protobuf)', async () => {
    const { tracer, ended } = tracerOf();
    const c = capture();
    const log = new SpanLog(c.exporter, tracer, { maxExportBatchSize: 512, maxQueueSize: 8192 }, true);
    const span = (a: string, b?: string) => {
      const s = tracer.start('span', SpanKind.CLIENT, undefined, undefined);
      s.setAttribute('k.a', a);
      if (b !== undefined) s.setAttribute('k.b', b);
      s.end();
    };
    // 'x' takes the dictionary's second index, then 4,200 values fill it: emptied once nothing waits.
    for (let i = 0; i < 4200; i++) span('x', `v${i}`);
    // After it, 'y' takes the same index 'x' had.
    for (const round of [0, 1]) {
      if (round === 1) {
        ended.length = 0;
        span('y');
      }
      for (const s of ended) write(log, s);
      await log.forceFlush();
      const got = c.batches.splice(0).flat();
      expect(got).toHaveLength(ended.length);
      const want = Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!);
      expect(Buffer.from(serializeSpans(got)).equals(want), `round ${round}`).toBe(true);
    }
    await log.shutdown();
  });

  it('a dictionary full by its characters starts again too: values seen after it are references, the bytes the same', async () => {
    const { tracer, ended } = tracerOf();
    const c = capture();
    const log = new SpanLog(c.exporter, tracer, { maxExportBatchSize: 512, maxQueueSize: 8192 }, true);
    const dictionary = () => (log as unknown as { values: string[] }).values;
    const span = (v: string) => {
      const s = tracer.start('span', SpanKind.CLIENT, undefined, undefined);
      s.setAttribute('k.a', v);
      s.end();
    };
    // 600 values of 256 characters (a model path, an id a client or an upstream sends): the
    // characters are full at 512 of them, long before the count's 4,096; one more as long after.
    const LATER = `Qwen/${'q'.repeat(251)}`;
    for (let i = 0; i < 600; i++) span(String(i).padEnd(256, 'p'));
    for (const round of [0, 1]) {
      if (round === 1) {
        ended.length = 0;
        span(LATER);
      }
      for (const s of ended) write(log, s);
      await log.forceFlush();
      const got = c.batches.splice(0).flat();
      const want = Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!);
      expect(Buffer.from(serializeSpans(got)).equals(want), `round ${round}`).toBe(true);
    }
    // Before, it never started again: every value first seen after it was written as its text
    // for the process's life (10 such attributes a span: ~0.3 us more a span written and exported).
    expect(dictionary()).toContain(LATER);
    await log.shutdown();
  });

  it('keeps the span limits as the SDK does (value length, attribute count, events, attributes per event)', async () => {
    const limits = { attributeValueLength: 5, attributeCount: 3, eventCount: 2, attributePerEventCount: 1 };
    const { tracer } = tracerOf(limits);
    const c = capture();
    const log = new SpanLog(c.exporter, tracer);
    const direct = tracer.start('limited', SpanKind.SERVER, undefined, undefined);
    const calls: Array<(s: { setAttribute(k: string, v: never): unknown }) => void> = [
      (s) => s.setAttribute('a', 'abcdefgh' as never),
      (s) => s.setAttribute('b', ['xyz', 'uvwxyz'] as never),
      (s) => s.setAttribute('a', 'again-and-again' as never),
      (s) => s.setAttribute('c', 3 as never),
      (s) => s.setAttribute('d', 4 as never),
    ];
    for (const f of calls) f(direct);
    direct.addEvent('e1', { x: 'long value', y: 2 });
    direct.addEvent('e2');
    direct.addEvent('e3', { z: true });
    direct.end();
    // The log gets every call (the limits are applied as the spans are made at export).
    log.open(
      SpanKind.SERVER,
      1,
      direct.traceId,
      direct.spanId,
      undefined,
      false,
      undefined,
      'limited',
      direct.startMs,
      direct.endMs,
    );
    for (const f of calls) f(log as never);
    log.event('e1', 1, { x: 'long value', y: 2 });
    log.event('e2', 2);
    log.event('e3', 3, { z: true });
    log.close();
    await log.forceFlush();
    const got = c.batches[0]![0]! as LeanSpan;
    expect(got.attributes).toEqual(direct.attributes);
    expect(got.droppedAttributesCount).toBe(direct.droppedAttributesCount);
    expect(got.events.map((e) => [e.name, e.attributes, e.droppedAttributesCount])).toEqual(
      direct.events.map((e) => [e.name, e.attributes, e.droppedAttributesCount]),
    );
    expect(got.droppedEventsCount).toBe(direct.droppedEventsCount);
    expect(got.attributes).toEqual({ a: 'again', b: ['xyz', 'uvwxy'], c: 3 });
  });

  it('a batch goes when full, else after the delay; a full queue drops; one export at a time, a hung one given up', async () => {
    const { tracer } = tracerOf();
    const c = capture('never');
    const log = new SpanLog(c.exporter, tracer, SMALL);
    one(log, tracer, 'a');
    expect(c.batches).toHaveLength(0);
    await sleep(100);
    // The delay passed: the one span went alone.
    expect(c.batches.map((b) => b.map((s) => s.name))).toEqual([['a']]);
    // That export hangs: the next spans wait, up to the queue's size, the rest dropped.
    for (const name of ['b', 'c', 'd', 'e', 'f']) one(log, tracer, name);
    expect(c.batches).toHaveLength(1);
    expect(log.queued).toBe(4);
    expect(log.dropped).toBe(1);
    // The hung export is given up after its timeout: the waiting spans go, a batch at a time.
    await sleep(250);
    expect(c.batches.map((b) => b.map((s) => s.name))).toEqual([['a'], ['b', 'c']]);
    c.pending[1]!(ExportResultCode.SUCCESS);
    await sleep(10);
    expect(c.batches.map((b) => b.map((s) => s.name))).toEqual([['a'], ['b', 'c'], ['d', 'e']]);
    c.pending[2]!(ExportResultCode.FAILED);
    await sleep(10);
    expect(log.queued).toBe(0);
  });

  it('forceFlush exports every waiting span in batches; shutdown flushes, stops the exporter, and drops later spans', async () => {
    const { tracer } = tracerOf();
    const c = capture();
    const log = new SpanLog(c.exporter, tracer, { ...SMALL, maxQueueSize: 10, maxExportBatchSize: 4 });
    for (const name of ['a', 'b', 'c']) one(log, tracer, name);
    await log.forceFlush();
    expect(c.batches.map((b) => b.map((s) => s.name))).toEqual([['a', 'b', 'c']]);
    const failing = capture('never');
    const log2 = new SpanLog(failing.exporter, tracer, { ...SMALL, maxQueueSize: 10, maxExportBatchSize: 4 });
    for (const name of ['a', 'b', 'c']) one(log2, tracer, name);
    const flushed = log2.forceFlush();
    failing.pending[0]!(ExportResultCode.FAILED);
    await expect(flushed).rejects.toBeTruthy();
    for (const name of ['d', 'e']) one(log, tracer, name);
    await log.shutdown();
    expect(c.shutdowns).toBe(1);
    expect(c.batches.map((b) => b.map((s) => s.name))).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    one(log, tracer, 'late');
    await log.forceFlush();
    expect(log.queued).toBe(0);
    expect(c.batches).toHaveLength(2);
  });

  it('reads OTEL_BSP_* as the SDK does when not given', () => {
    const { tracer } = tracerOf();
    const saved = { ...process.env };
    try {
      process.env.OTEL_BSP_MAX_QUEUE_SIZE = '100';
      process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE = '500';
      process.env.OTEL_BSP_SCHEDULE_DELAY = '250';
      process.env.OTEL_BSP_EXPORT_TIMEOUT = '1000';
      expect(new SpanLog(capture().exporter, tracer).settings).toEqual({
        maxQueueSize: 100,
        maxExportBatchSize: 100, // at most the queue, as the SDK's processor
        scheduledDelayMillis: 250,
        exportTimeoutMillis: 1000,
      });
      for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_BSP_')) delete process.env[k];
      expect(new SpanLog(capture().exporter, tracer).settings).toEqual({
        maxQueueSize: 2048,
        maxExportBatchSize: 512,
        scheduledDelayMillis: 5000,
        exportTimeoutMillis: 30000,
      });
    } finally {
      process.env = saved;
    }
  });

  it("costs a span's writing and reading back linearly in its values' length (budget, 1x against 4x)", () => {
    const { tracer } = tracerOf({ attributeValueLength: 1 << 30 });
    const dropping: SpanExporter = {
      export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
      shutdown: async () => {},
    };
    const log = new SpanLog(dropping, tracer, { maxQueueSize: 1 << 20, maxExportBatchSize: 1 << 20 });
    const s = measureScaling(
      (n) => ({
        ascii: 'a'.repeat(n),
        wide: 'é✓'.repeat(n >> 1),
        list: Array.from({ length: n >> 6 }, () => 'stop'),
      }),
      (v) => {
        log.open(
          SpanKind.CLIENT,
          1,
          'ab'.repeat(16),
          'cd'.repeat(8),
          'ef'.repeat(8),
          false,
          undefined,
          v.ascii,
          1,
          2,
        );
        log.setAttribute('ascii', v.ascii);
        log.setAttribute('wide', v.wide);
        log.setAttribute('list', v.list);
        log.event(v.ascii, 1.5, { wide: v.wide });
        log.close();
        void log.forceFlush();
      },
      { from: 1000, max: 4_000_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
