/**
 * server/tracing/lean.ts: toolproof's own span objects, handed to the SDK's batch processor as
 * ReadableSpans. What they must keep of the SDK's Span: the bytes (the protobuf serializer's direct
 * path writes exactly what the library's serializer writes reading the same span through its
 * ReadableSpan getters), the sampler's decisions (parent-based, ratio, a span it leaves out goes to
 * no processor), the span limits (value length, attribute count, event count, attributes per
 * event), setStatus's rules; and the exporter, which reuses its buffers between exports, never
 * sends one export's bytes in another's place.
 */
import {
  type Context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { TraceState, W3CTraceContextPropagator } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  type LeanLimits,
  type LeanSpan,
  LeanTracer,
  ParentContext,
  PooledIdGenerator,
  remoteParent as remoteParentOf,
} from '../../server/tracing/lean.js';
import {
  EncodedSpan,
  encodeAtEnd,
  protobufSpanExporter,
  type Slab,
  serializeSpans,
} from '../../server/tracing/otlp-proto.js';
import { knownVerdict } from '../../server/tracing/sdk.js';
import { otlpReceiver } from '../support/otlp-receiver.js';

const randomTraceId = () => new PooledIdGenerator().generateTraceId();

const LIMITS: LeanLimits = {
  attributeValueLength: 65536,
  attributeCount: 128,
  eventCount: 128,
  attributePerEventCount: 128,
};

function tracerOf(sampler: Sampler = new AlwaysOnSampler(), limits: Partial<LeanLimits> = {}) {
  const ended: ReadableSpan[] = [];
  const processor = {
    onStart() {},
    onEnd: (s: ReadableSpan) => ended.push(s),
    forceFlush: async () => {},
    shutdown: async () => {},
  } as unknown as SpanProcessor;
  const tracer = new LeanTracer(
    resourceFromAttributes({ 'service.name': 'toolproof', 'process.pid': 4242 }),
    { name: 'toolproof', version: undefined, schemaUrl: undefined },
    sampler,
    processor,
    { ...LIMITS, ...limits },
  );
  return { tracer, ended };
}

const remoteParent: SpanContext = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState('vendor=1,other=abc'),
};
const remote: Context = trace.setSpanContext(ROOT_CONTEXT, remoteParent);

/** A request's spans as sdk.ts makes them, plus the wire format's edge cases. */
function requestSpans(tracer: LeanTracer): void {
  const server = tracer.start('POST /v1/chat/completions', SpanKind.SERVER, remote, remoteParent);
  server.setAttribute('http.request.method', 'POST');
  server.setAttribute('gen_ai.operation.name', 'chat');
  server.setAttribute('gen_ai.request.model', 'qwen3-coder');
  server.setAttribute('gen_ai.request.temperature', 0.2);
  server.setAttribute('gen_ai.usage.input_tokens', 1200);
  server.setAttribute('gen_ai.request.stream', true);
  server.setAttribute('toolproof.disabled', false);
  server.setAttribute('user_agent.original', 'claude-cli/2.0.0 (external, cli) — ünïcødé 🚀');
  server.setAttribute('ünïcødé.key', 'v');
  server.addEvent('toolproof.forced', { 'toolproof.policy': 'force-tool-use', 'toolproof.attempt': 1 });
  server.addEvent('toolproof.leak', { 'toolproof.leak.format': 'hermes', 'toolproof.reasons': ['a', 'b'] });
  server.addEvent('toolproof.final_answer');
  const attempt = tracer.start(
    'chat qwen3-coder',
    SpanKind.CLIENT,
    trace.setSpanContext(ROOT_CONTEXT, server),
    server,
  );
  attempt.setAttribute('gen_ai.response.finish_reasons', ['tool_calls', 'stop']);
  attempt.setAttribute('server.port', 8000);
  attempt.setAttribute('server.address', 'gpu-a');
  attempt.setAttribute('server.address', 'gpu-b'); // a replica named later: overwritten in place
  attempt.setAttribute('toolproof.upstream.headers_ms', 12.5);
  attempt.setAttribute('small', 127);
  attempt.setAttribute('two-bytes', 128);
  attempt.setAttribute('three-bytes', 2 ** 14);
  attempt.setAttribute('four-bytes', 2 ** 21 + 1);
  attempt.setAttribute('five-bytes', 2 ** 28 + 1);
  attempt.setAttribute('neg', -5);
  attempt.setAttribute('big', 2 ** 40 + 3);
  attempt.setAttribute('negbig', -(2 ** 40) - 7);
  attempt.setAttribute('nan', Number.NaN);
  attempt.setAttribute('nums', [1, -2, 3.5]);
  attempt.setAttribute('bools', [true, false]);
  attempt.setAttribute('empty', '');
  attempt.setAttribute('ascii-kv-fits', 'a'.repeat(100)); // key + value at the one-byte edge
  attempt.setAttribute('ascii127', 'a'.repeat(127));
  attempt.setAttribute('ascii128', 'a'.repeat(128));
  attempt.setAttribute('late-non-ascii', `${'a'.repeat(100)}€`);
  attempt.setAttribute('medium', 'm'.repeat(300));
  attempt.setAttribute('long', 'é'.repeat(20_000));
  attempt.setAttribute('k'.repeat(130), 'a long key');
  attempt.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream said 500 ✗' });
  attempt.end();
  server.setStatus({ code: SpanStatusCode.OK });
  server.end();
  // A root span (a new trace id), not kind SERVER or CLIENT.
  const root = tracer.start('GET /v1/models', SpanKind.INTERNAL, ROOT_CONTEXT, undefined);
  root.end();
}

/**
 * Spans without a trace state, as most requests' are (otlp-proto.ts writes their fixed fields in
 * one go): and what makes it take its general path (a name past 127 characters or not ASCII,
 * an event's name likewise, a status message, ids that are not lowercase hex).
 */
function plainSpans(tracer: LeanTracer): void {
  const parent: SpanContext = { ...remoteParent, traceState: undefined };
  const server = tracer.start('POST /v1/messages', SpanKind.SERVER, undefined, parent);
  server.setAttribute('gen_ai.operation.name', 'chat');
  server.addEvent('toolproof.retry', { 'toolproof.retry.reason': 'invalid-arguments' });
  server.addEvent('événement ✓');
  server.addEvent('e'.repeat(200), { n: 1 });
  server.addEvent('toolproof.final_answer');
  for (const [name, status] of [
    ['chat ünïcødé', { code: SpanStatusCode.ERROR }],
    ['n'.repeat(130), { code: SpanStatusCode.ERROR, message: 'cut' }],
    ['chat qwen3-coder', { code: SpanStatusCode.OK }],
    ['chat qwen3-coder', { code: SpanStatusCode.UNSET }],
  ] as const) {
    const child = tracer.start(name, SpanKind.CLIENT, undefined, server);
    child.setAttribute('server.port', 8000);
    child.setStatus(status);
    child.end();
  }
  const ids = tracer.ids;
  tracer.ids = { generateTraceId: () => 'ABCDEF'.repeat(5) + '01', generateSpanId: () => 'A1'.repeat(8) };
  tracer.start('upper-case ids', SpanKind.INTERNAL, ROOT_CONTEXT, undefined).end();
  tracer.ids = ids;
  server.end();
}

describe('lean spans', () => {
  it('serialize to the bytes the library writes from their ReadableSpan getters', () => {
    const { tracer, ended } = tracerOf();
    requestSpans(tracer);
    expect(ended).toHaveLength(3);
    const ours = Buffer.from(serializeSpans(ended));
    expect(ours.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!))).toBe(true);
    // A full batch: lengths past 2^14 and 2^21.
    const batch: ReadableSpan[] = [];
    while (batch.length < 512) {
      requestSpans(tracer);
      batch.push(...ended.splice(0));
    }
    expect(
      Buffer.from(serializeSpans(batch)).equals(
        Buffer.from(ProtobufTraceSerializer.serializeRequest(batch)!),
      ),
    ).toBe(true);
    ended.length = 0;
    plainSpans(tracer);
    expect(ended).toHaveLength(6);
    const expected = Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!);
    expect(Buffer.from(serializeSpans(ended)).equals(expected)).toBe(true);
    const encoded = ended.map((e) => encodeAtEnd(e as LeanSpan));
    expect(Buffer.from(serializeSpans(encoded)).equals(expected)).toBe(true);
  });

  it('copy the attributes a span repeats from the last span of its name, and write the ones that changed', () => {
    const { tracer, ended } = tracerOf();
    const reasons = ['stop'];
    // Each span's attributes in this order (an object's keys keep theirs).
    const lists: Record<string, unknown>[] = [
      { a: 1, b: 'x', c: reasons, d: true },
      { a: 1, b: 'x', c: reasons, d: true },
      { a: 1, b: 'y', c: reasons, d: true },
      { a: 1, b: 'w', c: reasons, d: true },
      { a: 1, e: 5, b: 'y', c: reasons, d: true },
      { a: 1, b: 'y' },
      { a: 1, b: 'y', c: reasons, d: true, f: 2.5 },
      { a: 1, 'gen_ai.input.messages': '[{"role":"user"}]', b: 'y' },
      { a: 1, b: 'y', big: 'z'.repeat(5000), d: true },
      { a: 1, b: 'y', c: reasons, d: true },
      { a: 2, b: 'y', c: reasons, d: false },
    ];
    for (const encode of [false, true]) {
      for (const [n, list] of lists.entries()) {
        // The same array, changed in place after its span ended: the next span has its new items.
        if (n === 6) reasons.push('length');
        const span = tracer.start('chat qwen3-coder', SpanKind.CLIENT, ROOT_CONTEXT, undefined);
        for (const [k, v] of Object.entries(list)) span.setAttribute(k, v as never);
        span.end();
        const spans = ended.splice(0);
        const expected = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
        const written = encode ? spans.map((e) => encodeAtEnd(e as LeanSpan)) : spans;
        expect([n, Buffer.from(serializeSpans(written)).equals(expected)]).toEqual([n, true]);
      }
      reasons.length = 1;
    }
  });

  it('written into bytes as they end (the protobuf exporter): the same bytes at export, their objects let go', () => {
    const { tracer, ended } = tracerOf();
    const batch: ReadableSpan[] = [];
    while (batch.length < 600) {
      requestSpans(tracer);
      batch.push(...ended.splice(0));
    }
    const expected = Buffer.from(ProtobufTraceSerializer.serializeRequest(batch)!);
    // As the tracer's encode hook would, span by span (several slabs: 600 spans of ~1-40 KB).
    const encoded = batch.map((s) => encodeAtEnd(s as LeanSpan) as unknown as EncodedSpan);
    expect(encoded.every((e) => e instanceof EncodedSpan)).toBe(true);
    const slabs = new Set(encoded.map((e) => e.bytes.buffer));
    expect(slabs.size).toBeGreaterThan(1);
    // What the batch processor reads, and the ids read back from the bytes.
    encoded.forEach((e, i) => {
      const s = batch[i] as LeanSpan;
      expect(e.spanContext().traceFlags).toBe(s.traceFlags);
      expect(e.spanContext().traceId).toBe(s.traceId);
      expect(e.spanContext().spanId).toBe(s.spanId);
      expect(e.resource).toBe(s.resource);
      expect(e.instrumentationScope).toBe(s.instrumentationScope);
    });
    expect(Buffer.from(serializeSpans(encoded as unknown as ReadableSpan[])).equals(expected)).toBe(true);
    // Through a tracer with the hook: the processor gets the encoded spans.
    const hooked = tracerOf();
    hooked.tracer.encode = encodeAtEnd;
    requestSpans(hooked.tracer);
    expect(hooked.ended).toHaveLength(3);
    expect(hooked.ended.every((s) => s instanceof EncodedSpan)).toBe(true);
  });

  it('read as the SDK shapes them: ids, parent, times, attributes, events, status (the JSON exporter reads these)', () => {
    const { tracer, ended } = tracerOf();
    requestSpans(tracer);
    const [attempt, server, root] = ended as LeanSpan[];
    expect(server!.spanContext().traceId).toBe(remoteParent.traceId);
    expect(server!.parentSpanContext?.spanId).toBe(remoteParent.spanId);
    expect(server!.traceState?.serialize()).toBe('vendor=1,other=abc');
    expect(attempt!.parentSpanContext?.spanId).toBe(server!.spanId);
    expect(attempt!.traceId).toBe(server!.traceId);
    expect(root!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root!.traceId).not.toBe(server!.traceId);
    expect(root!.parentSpanContext).toBeUndefined();
    expect(server!.attributes['gen_ai.request.model']).toBe('qwen3-coder');
    expect(attempt!.attributes['server.address']).toBe('gpu-b');
    expect(Object.keys(attempt!.attributes).indexOf('server.address')).toBe(2);
    expect(server!.events.map((e) => e.name)).toEqual([
      'toolproof.forced',
      'toolproof.leak',
      'toolproof.final_answer',
    ]);
    expect(attempt!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream said 500 ✗' });
    expect(server!.status).toEqual({ code: SpanStatusCode.OK });
    // Times: the epoch now, start <= event <= end, the duration their difference.
    const ns = (t: [number, number]) => t[0] * 1e9 + t[1];
    const now = Date.now() * 1e6;
    expect(Math.abs(ns(server!.startTime) - now)).toBeLessThan(60_000 * 1e6);
    expect(ns(server!.events[0]!.time)).toBeGreaterThanOrEqual(ns(server!.startTime));
    expect(ns(server!.endTime)).toBeGreaterThanOrEqual(ns(server!.events[2]!.time));
    expect(Math.abs(ns(server!.duration) - (ns(server!.endTime) - ns(server!.startTime)))).toBeLessThan(1000);
    expect(server!.endTime[1]).toBeLessThan(1e9);
    // The library's JSON serializer takes them as they are.
    const json = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(ended)!));
    const spans = json.resourceSpans[0].scopeSpans[0].spans;
    expect(spans.map((s: { name: string }) => s.name)).toEqual([
      'chat qwen3-coder',
      'POST /v1/chat/completions',
      'GET /v1/models',
    ]);
  });

  it('keep one clock within a trace: a wall clock that jumps (or a thread preempted between the clocks) never ends a child after its parent', () => {
    const { tracer, ended } = tracerOf();
    const real = Date.now;
    let skew = 0;
    Date.now = () => real() + skew;
    try {
      const server = tracer.start('POST /v1/chat/completions', SpanKind.SERVER, remote, remoteParent);
      skew = 50; // from here on the wall clock reads 50 ms later than the monotonic one says
      const attempt = tracer.start('chat sim', SpanKind.CLIENT, new ParentContext(server), server);
      attempt.end();
      server.end();
    } finally {
      Date.now = real;
    }
    const [attempt, server] = ended as LeanSpan[];
    expect(attempt!.startMs).toBeGreaterThanOrEqual(server!.startMs);
    expect(attempt!.endMs).toBeLessThanOrEqual(server!.endMs);
    expect(server!.endMs - server!.startMs).toBeLessThan(50);
  });

  it('get ids from a pool of random bytes: W3C shapes, never repeated, and a given IdGenerator is used', () => {
    const { tracer } = tracerOf(new AlwaysOnSampler());
    const traceIds = new Set<string>();
    const spanIds = new Set<string>();
    // Past the pool's 8 KB several times (24 bytes a root span): ids keep coming, none twice.
    for (let i = 0; i < 2000; i++) {
      const span = tracer.start('root', SpanKind.SERVER, ROOT_CONTEXT, undefined);
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(trace.isSpanContextValid(span)).toBe(true);
      traceIds.add(span.traceId);
      spanIds.add(span.spanId);
    }
    expect(traceIds.size).toBe(2000);
    expect(spanIds.size).toBe(2000);
    const ids = new PooledIdGenerator();
    expect(ids.generateTraceId()).not.toBe(ids.generateTraceId());
    tracer.ids = { generateTraceId: () => 'a'.repeat(32), generateSpanId: () => 'b'.repeat(16) };
    const given = tracer.start('root', SpanKind.SERVER, ROOT_CONTEXT, undefined);
    expect([given.traceId, given.spanId]).toEqual(['a'.repeat(32), 'b'.repeat(16)]);
  });

  it('follow the sampler: a span it leaves out keeps its ids for the traceparent and goes to no processor', () => {
    const unsampled: SpanContext = { ...remoteParent, traceFlags: TraceFlags.NONE };
    const parentBased = tracerOf(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const out = parentBased.tracer.start(
      'POST /v1/chat/completions',
      SpanKind.SERVER,
      trace.setSpanContext(ROOT_CONTEXT, unsampled),
      unsampled,
    );
    expect(out.recording).toBe(false);
    expect(out.traceFlags).toBe(0);
    expect(out.traceId).toBe(remoteParent.traceId);
    expect(out.spanId).toMatch(/^[0-9a-f]{16}$/);
    out.setAttribute('a', 1);
    out.addEvent('e');
    out.end();
    expect(out.attributeCount).toBe(0);
    expect(out.attrs).toBeUndefined();
    expect(parentBased.ended).toHaveLength(0);

    const off = tracerOf(new AlwaysOffSampler());
    off.tracer.start('x', SpanKind.SERVER, ROOT_CONTEXT, undefined).end();
    expect(off.ended).toHaveLength(0);

    // A child under a ParentContext (what sdk.ts gives the sampler for an attempt span) has
    // its parent's verdict under a parent-based sampler, as under the API's own context.
    const sampled = parentBased.tracer.start('s', SpanKind.SERVER, ROOT_CONTEXT, undefined);
    const parents = [sampled, out];
    for (const parent of parents) {
      const ctx = new ParentContext(parent);
      expect(trace.getSpanContext(ctx)).toBe(parent);
      const key = Symbol('k');
      const set = ctx.setValue(key, 1);
      expect(set.getValue(key)).toBe(1);
      expect(trace.getSpanContext(set)?.spanId).toBe(parent.spanId);
      expect(trace.getSpanContext(ctx.deleteValue(key))).toBe(parent);
      expect(trace.getSpanContext(trace.deleteSpan(ctx))).toBeUndefined();
      const child = parentBased.tracer.start('c', SpanKind.CLIENT, ctx, parent);
      expect(child.recording).toBe(parent.recording);
      expect(child.traceId).toBe(parent.traceId);
    }
    parentBased.ended.length = 0;

    // A ratio sampler decides by the trace id: a child has its parent's verdict.
    const ratio = tracerOf(new TraceIdRatioBasedSampler(0.5));
    let recorded = 0;
    for (let i = 0; i < 200; i++) {
      const s = ratio.tracer.start('s', SpanKind.SERVER, ROOT_CONTEXT, undefined);
      const c = ratio.tracer.start('c', SpanKind.CLIENT, trace.setSpanContext(ROOT_CONTEXT, s), s);
      expect(c.recording).toBe(s.recording);
      if (s.recording) recorded++;
      c.end();
      s.end();
    }
    expect(recorded).toBeGreaterThan(40);
    expect(recorded).toBeLessThan(160);
    expect(ratio.ended).toHaveLength(recorded * 2);
  });

  it('ask the sampler once per trace when told its children follow (sdk.ts): the same verdicts as asking it for each span', () => {
    // The samplers sdk.ts configures (settings.ts's names), each asked for every span and told
    // once per trace: a child of a sampled span gets the same flags, trace state and recording.
    const samplers: [string, () => Sampler][] = [
      ['parentbased_always_on', () => new ParentBasedSampler({ root: new AlwaysOnSampler() })],
      ['parentbased_traceidratio', () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.5) })],
      ['parentbased_always_off', () => new ParentBasedSampler({ root: new AlwaysOffSampler() })],
      ['always_on', () => new AlwaysOnSampler()],
      ['traceidratio', () => new TraceIdRatioBasedSampler(0.5)],
      ['always_off', () => new AlwaysOffSampler()],
    ];
    const parents: (SpanContext | undefined)[] = [
      undefined,
      remoteParent,
      { ...remoteParent, traceFlags: TraceFlags.NONE },
    ];
    for (const [name, make] of samplers) {
      const asked = tracerOf(make()).tracer;
      const once = tracerOf(make()).tracer;
      once.sampledChildren = true;
      let calls = 0;
      const sampler = once.sampler;
      const shouldSample = sampler.shouldSample.bind(sampler);
      sampler.shouldSample = (...a) => {
        calls++;
        return shouldSample(...a);
      };
      for (let i = 0; i < 100; i++)
        for (const parent of parents) {
          const ids = { generateTraceId: () => randomTraceId(), generateSpanId: () => 'b'.repeat(16) };
          asked.ids = once.ids = ids;
          const traceId = ids.generateTraceId();
          ids.generateTraceId = () => traceId;
          const ctx = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
          const a = asked.start('s', SpanKind.SERVER, ctx, parent);
          const o = once.start('s', SpanKind.SERVER, ctx, parent);
          const before = calls;
          const ac = asked.start('c', SpanKind.CLIENT, undefined, a);
          const oc = once.start('c', SpanKind.CLIENT, undefined, o);
          const verdict = (s: LeanSpan) => [s.recording, s.traceFlags, s.traceId, s.traceState?.serialize()];
          expect([name, ...verdict(o), ...verdict(oc)]).toEqual([name, ...verdict(a), ...verdict(ac)]);
          // Asked for the child only when its parent was not sampled.
          expect(calls - before).toBe(o.recording ? 0 : 1);
        }
    }
  });

  it("answer for the default sampler and always_on without asking them (sdk.ts knownVerdict): the SDK sampler's verdict, no attribute, no trace state", () => {
    const samplers: [string, Sampler][] = [
      ['parentbased_always_on', new ParentBasedSampler({ root: new AlwaysOnSampler() })],
      ['always_on', new AlwaysOnSampler()],
    ];
    const state = new TraceState('vendor=1');
    const parents: (SpanContext | undefined)[] = [
      undefined,
      remoteParent,
      { ...remoteParent, traceState: state },
      { ...remoteParent, traceFlags: TraceFlags.NONE },
      { ...remoteParent, traceFlags: TraceFlags.NONE, traceState: state },
      // Flags past the sampled bit, as a traceparent may carry them.
      { ...remoteParent, traceFlags: 0x03 },
      { ...remoteParent, traceFlags: 0x02 },
    ];
    let answered = 0;
    for (const [name, sampler] of samplers)
      for (const parent of parents) {
        const ctx = parent ? new ParentContext(parent) : ROOT_CONTEXT;
        const asked = sampler.shouldSample(ctx, randomTraceId(), 's', SpanKind.SERVER, {}, []);
        const known = knownVerdict(name, parent);
        if (known === undefined) continue;
        answered++;
        expect([name, parent?.traceFlags, known]).toEqual([name, parent?.traceFlags, asked]);
      }
    expect(answered).toBe(samplers.length * parents.length);
    // An invalid parent (all-zero ids, which no traceparent toolproof reads has) is left to the sampler.
    expect(
      knownVerdict('parentbased_always_on', { ...remoteParent, spanId: '0'.repeat(16) }),
    ).toBeUndefined();
    // Every other sampler is asked.
    for (const name of ['parentbased_traceidratio', 'parentbased_always_off', 'traceidratio', 'always_off'])
      expect(knownVerdict(name, undefined)).toBeUndefined();
  });

  it('skip what the sampler leaves out (startOrSkip, sdk.ts): the same verdicts and trace ids as start, no span made', () => {
    const samplers: [string, () => Sampler][] = [
      ['parentbased_always_on', () => new ParentBasedSampler({ root: new AlwaysOnSampler() })],
      ['parentbased_traceidratio', () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.5) })],
      ['parentbased_always_off', () => new ParentBasedSampler({ root: new AlwaysOffSampler() })],
      ['traceidratio', () => new TraceIdRatioBasedSampler(0.5)],
      ['always_off', () => new AlwaysOffSampler()],
    ];
    const parents = [undefined, remoteParent, { ...remoteParent, traceFlags: TraceFlags.NONE }];
    for (const [name, make] of samplers) {
      const { tracer, ended } = tracerOf(make());
      let skipped = 0;
      for (let i = 0; i < 100; i++)
        for (const parent of parents) {
          const traceId = randomTraceId();
          tracer.ids = { generateTraceId: () => traceId, generateSpanId: () => 'b'.repeat(16) };
          const ctx = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
          const started = tracer.start('s', SpanKind.SERVER, ctx, parent);
          const got = tracer.startOrSkip('s', SpanKind.SERVER, parent);
          if (typeof got === 'string') {
            skipped++;
            expect([name, started.recording, got]).toEqual([name, false, started.traceId]);
          } else
            expect([name, got.recording, got.traceFlags, got.traceId]).toEqual([
              name,
              started.recording,
              started.traceFlags,
              started.traceId,
            ]);
        }
      expect(skipped).toBeGreaterThan(0);
      expect(ended).toHaveLength(0);
    }
  });

  it("read the client's traceparent and tracestate as the W3C propagator extracts them", () => {
    const propagator = new W3CTraceContextPropagator();
    const id = '4bf92f3577b34da6a3ce929d0e0e4736';
    const headers: Record<string, string | string[] | undefined>[] = [
      {},
      { traceparent: '' },
      { traceparent: `00-${id}-00f067aa0ba902b7-01` },
      { traceparent: `00-${id}-00f067aa0ba902b7-00` },
      { traceparent: `00-${id}-00f067aa0ba902b7-03`, tracestate: 'vendor=1,other=abc' },
      { traceparent: `00-${id}-00f067aa0ba902b7-01`, tracestate: ['a=1', 'b=2'] },
      { traceparent: `00-${id}-00f067aa0ba902b7-01`, tracestate: '' },
      { traceparent: [`00-${id}-00f067aa0ba902b7-01`, `00-${id}-1111111111111111-00`] },
      { traceparent: ` 00-${id}-00f067aa0ba902b7-01 ` },
      { traceparent: `00-${id.toUpperCase()}-00F067AA0BA902B7-01` },
      { traceparent: `ff-${id}-00f067aa0ba902b7-01` },
      { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
      { traceparent: `00-${id}-${'0'.repeat(16)}-01` },
      { traceparent: `00-${id}-00f067aa0ba902b7-01-extra` },
      { traceparent: `01-${id}-00f067aa0ba902b7-01-extra` },
      { traceparent: `00-${id}-00f067aa0ba902b7-1` },
      { traceparent: `00-${id}-00f067aa0ba902b7` },
      { traceparent: 'garbage' },
    ];
    for (const h of headers) {
      const extracted = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, h, defaultTextMapGetter));
      const read = remoteParentOf(h);
      expect({ ...read, traceState: read?.traceState?.serialize() }).toEqual({
        ...extracted,
        traceState: extracted?.traceState?.serialize(),
      });
    }
  });

  it('keep the span limits as the SDK does', () => {
    const { tracer, ended } = tracerOf(undefined, {
      attributeValueLength: 5,
      attributeCount: 3,
      eventCount: 2,
      attributePerEventCount: 2,
    });
    const s = tracer.start('limited', SpanKind.SERVER, ROOT_CONTEXT, undefined);
    s.setAttribute('a', 'abcdefgh');
    s.setAttribute('b', ['abcdefgh', 'xy']);
    s.setAttribute('c', undefined);
    s.setAttribute('', 'no key');
    s.setAttribute('c', 3);
    s.setAttribute('d', 4); // past the count: dropped
    s.setAttribute('a', 'again'); // an existing key: still set
    s.addEvent('one', { x: 1 });
    s.addEvent('two', { x: 'long value', y: 2, z: 3, w: undefined });
    s.addEvent('three'); // past the event count: the oldest goes
    s.setStatus({ code: SpanStatusCode.ERROR, message: 'first' });
    s.setStatus({ code: SpanStatusCode.UNSET });
    s.end();
    s.setAttribute('after', 1); // ended: ignored
    s.end(); // once only
    expect(ended).toHaveLength(1);
    expect(s.attributes).toEqual({ a: 'again', b: ['abcde', 'xy'], c: 3 });
    expect(s.droppedAttributesCount).toBe(1);
    expect(s.events.map((e) => e.name)).toEqual(['two', 'three']);
    expect(s.droppedEventsCount).toBe(1);
    expect(s.events[0]!.attributes).toEqual({ x: 'long ', y: 2 });
    expect(s.events[0]!.droppedAttributesCount).toBe(1);
    expect(s.status).toEqual({ code: SpanStatusCode.ERROR, message: 'first' });
    expect(
      Buffer.from(serializeSpans(ended)).equals(
        Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!),
      ),
    ).toBe(true);
  });

  it('written into slabs that are reused once their spans are exported, and never before', async () => {
    const sink = await otlpReceiver();
    try {
      const exporter = protobufSpanExporter(`${sink.origin}/v1/traces`);
      const { tracer, ended } = tracerOf();
      tracer.encode = encodeAtEnd;
      /**
       * Spans of a request's size (~1 KB) until they have filled `n` more slabs, each with a copy
       * of its bytes as written.
       */
      const fill = (n: number) => {
        const start = ended.length;
        const slabs = new Set<Slab>();
        while (slabs.size <= n) {
          const s = tracer.start('POST /v1/chat/completions', SpanKind.SERVER, ROOT_CONTEXT, undefined);
          s.setAttribute('gen_ai.operation.name', 'chat');
          s.setAttribute('user_agent.original', `agent/${ended.length} ${'u'.repeat(800)}`);
          s.addEvent('toolproof.forced', { 'toolproof.policy': 'force-tool-use', 'toolproof.attempt': 1 });
          s.end();
          slabs.add((ended[ended.length - 1] as unknown as EncodedSpan).slab);
          // Slabs reused while their spans wait would never make n new ones: fail, not hang.
          if (ended.length - start > 5000) throw new Error(`${n} slabs not filled by 5,000 spans`);
        }
        const spans = ended.slice(start) as unknown as EncodedSpan[];
        return { spans, copies: spans.map((e) => Buffer.from(e.bytes.subarray(e.start, e.end))) };
      };
      const intact = (b: ReturnType<typeof fill>) =>
        b.spans.every((e, i) => e.bytes.subarray(e.start, e.end).equals(b.copies[i]!));
      const exportOf = async (b: ReturnType<typeof fill>) => {
        const expected = Buffer.from(serializeSpans(b.spans as unknown as ReadableSpan[]));
        const n = sink.raw.length;
        const result = await new Promise<{ code: number }>((r) =>
          exporter.export(b.spans as unknown as ReadableSpan[], r),
        );
        expect(result.code).toBe(0);
        expect(sink.raw[n]!.body.equals(expected)).toBe(true);
      };
      const a = fill(2);
      const b = fill(2); // waits while a is exported and c is written
      await exportOf(a);
      const c = fill(3);
      // c went into a's slabs (exported: free again).
      const buffersOf = (x: ReturnType<typeof fill>) => new Set(x.spans.map((e) => e.bytes.buffer));
      const reused = [...buffersOf(c)].filter((buf) => buffersOf(a).has(buf));
      expect(reused.length).toBeGreaterThan(0);
      // b's bytes were not written over (its slabs not reused before its export).
      expect(intact(b)).toBe(true);
      expect(intact(c)).toBe(true);
      await exportOf(b);
      await exportOf(c);
      await exporter.shutdown();
    } finally {
      await sink.close();
    }
  });

  it('are exported in buffers reused between exports, a retried export with its own bytes', async () => {
    // The first POST is asked to come again in a second: the transport retries it with the
    // bytes it holds, after the second export has been written.
    const sink = await otlpReceiver({
      respond: (i) => (i === 0 ? { status: 503, headers: { 'retry-after': '1' } } : undefined),
    });
    try {
      const exporter = protobufSpanExporter(`${sink.origin}/v1/traces`);
      const batches: ReadableSpan[][] = [];
      for (let i = 0; i < 4; i++) {
        const { tracer, ended } = tracerOf();
        requestSpans(tracer);
        batches.push(ended.slice(0, i + 1));
      }
      const expected = batches.map((b) => Buffer.from(ProtobufTraceSerializer.serializeRequest(b)!));
      const first = new Promise<{ code: number }>((r) => exporter.export(batches[0]!, r));
      while (sink.raw.length < 1) await new Promise((r) => setTimeout(r, 5));
      const second = new Promise<{ code: number }>((r) => exporter.export(batches[1]!, r));
      expect((await second).code).toBe(0);
      expect((await first).code).toBe(0);
      // Sequential exports: the buffers of the first two are reused.
      for (const b of batches.slice(2))
        expect((await new Promise<{ code: number }>((r) => exporter.export(b, r))).code).toBe(0);
      await exporter.shutdown();
      const bodies = sink.raw.map((r) => r.body);
      expect(bodies).toHaveLength(5);
      const want = [expected[0], expected[1], expected[0], expected[2], expected[3]];
      for (let i = 0; i < 5; i++) expect(bodies[i]!.equals(want[i]!)).toBe(true);
    } finally {
      await sink.close();
    }
  });
});
