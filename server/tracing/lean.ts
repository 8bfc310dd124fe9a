/**
 * A request's spans, kept lean: what the SDK's Tracer and Span would make of them, without their
 * per-call machinery. The SDK's own pieces still decide and export (its Sampler, its id generator,
 * its BatchSpanProcessor with the OTEL_BSP_* settings, its OTLP exporter); only the span object is
 * toolproof's: attributes in one array (key, value, key, value...) instead of an object that V8 turns into a
 * dictionary past 19 keys, times as one number each (epoch milliseconds) instead of an [s, ns]
 * pair per call, events as small records, no Context per span, and the span is its own
 * SpanContext. A LeanSpan is a ReadableSpan: the processor and any exporter read it through
 * getters that build the SDK's shapes (HrTime, Attributes, TimedEvent) when asked; the protobuf
 * serializer (otlp-proto.ts) reads the arrays directly.
 *
 * The SDK's limits hold as its Span applies them: attribute values cut at the length limit
 * (strings, and each string of an array), new keys past the attribute count limit dropped and
 * counted, the oldest event dropped past the event count limit, event attributes past their limit
 * dropped and counted, a null or undefined value ignored. Values are not type-checked as the
 * SDK's setAttribute does: sdk.ts and genai.ts set strings, numbers, booleans and string arrays
 * only. Loaded with the SDK only (sdk.ts).
 */
import {
  type AttributeValue,
  type Attributes,
  type Context,
  createContextKey,
  type HrTime,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  type SpanKind,
  type SpanStatus,
  type TraceState,
  trace,
} from '@opentelemetry/api';
import {
  type InstrumentationScope,
  parseTraceParent,
  TraceState as W3CTraceState,
} from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { randomFillSync } from 'node:crypto';
import { ownString } from '../../protocol/own-string.js';
import {
  type IdGenerator,
  type ReadableSpan,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  type SpanProcessor,
  type TimedEvent,
} from '@opentelemetry/sdk-trace-base';

/** The SDK's span limits (OTEL_SPAN_*_LIMIT, OTEL_ATTRIBUTE_*_LIMIT), as numbers. */
export interface LeanLimits {
  attributeValueLength: number;
  attributeCount: number;
  eventCount: number;
  attributePerEventCount: number;
}

const NO_LINKS: Link[] = [];
const NO_EVENTS: TimedEvent[] = [];
const NO_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const SAMPLED = 1;
/** Attributes a span has room for before its array grows (toolproof's spans have 14-19). */
const ATTRIBUTE_ROOM = 20;
const STATUS_UNSET = 0;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

/** Epoch milliseconds as the SDK's HrTime ([seconds, nanoseconds]). */
export function hrOf(ms: number): HrTime {
  let s = Math.floor(ms / 1000);
  let ns = Math.round((ms - s * 1000) * 1e6);
  if (ns >= 1e9) {
    s += 1;
    ns -= 1e9;
  }
  return [s, ns];
}

/** The API's key of a context's span (createContextKey is Symbol.for: the API's own key). */
const SPAN_KEY = createContextKey('OpenTelemetry Context Key SPAN');

/**
 * A Context that holds one span as the parent of the next (what `trace.setSpanContext(ROOT_CONTEXT,
 * span)` makes), for the sampler of a child span: one small object, where the API's context
 * copies a Map for each value set. The sampler reads it through `trace.getSpanContext`.
 */
export class ParentContext implements Context {
  private wrapped: Span | undefined;
  constructor(private readonly parent: SpanContext) {}

  getValue(key: symbol): unknown {
    if (key !== SPAN_KEY) return undefined;
    this.wrapped ??= trace.wrapSpanContext(this.parent);
    return this.wrapped;
  }

  setValue(key: symbol, value: unknown): Context {
    return trace.setSpanContext(ROOT_CONTEXT, this.parent).setValue(key, value);
  }

  deleteValue(key: symbol): Context {
    return key === SPAN_KEY ? ROOT_CONTEXT : this;
  }
}

/**
 * The client's span from its W3C `traceparent` and `tracestate` headers, as
 * W3CTraceContextPropagator.extract reads them (its own parseTraceParent: the format's rules, a
 * version's extra fields, all-zero ids; the first of repeated traceparents, repeated tracestates
 * joined), without the Context it wraps the result in (a Map copied per request) and the
 * validity checks its parse already made; undefined when there is none or it is not valid.
 */
export function remoteParent(
  headers: Record<string, string | string[] | undefined>,
): SpanContext | undefined {
  const header = headers.traceparent;
  if (!header) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== 'string') return undefined;
  const parsed = parseTraceParent(value);
  if (!parsed) return undefined;
  const context: SpanContext = {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.traceFlags,
    isRemote: true,
    traceState: undefined,
  };
  const state = headers.tracestate;
  if (state) context.traceState = new W3CTraceState(Array.isArray(state) ? state.join(',') : state);
  return context;
}

/** One event of a span (a TimedEvent through its getter). */
export class LeanEvent implements TimedEvent {
  constructor(
    readonly name: string,
    /** Epoch milliseconds. */
    readonly ms: number,
    readonly attributes: Attributes | undefined,
    readonly droppedAttributesCount: number,
  ) {}

  get time(): HrTime {
    return hrOf(this.ms);
  }
}

/**
 * Random bytes drawn 4 KB at a time, and their hex text made in one call: an id is a slice of
 * that text (one native call per 4 KB, where each id was one: a short stream's three ids, 32
 * bytes, take 1/128 of a draw). In a loop a draw with its hex costs ~8 µs for 1 KB and ~12 for
 * 4 KB; in the server each call comes with OpenSSL's code cold, and 1 KB draws read ~1 µs a
 * request of randomFillSync in a traced server's profile. A slice of 13 characters or more
 * shares the text it came from (V8's sliced strings), so an id kept keeps at most that 8 KB
 * string alive, and ids live with their request (the spans, the log line). An id is not drawn
 * twice.
 */
const POOL = Buffer.allocUnsafeSlow(4096);
let poolHex = '';
let pooled = POOL.length;

/** `bytes` random bytes as lowercase hex, never all zeros (an invalid id: the last byte is 1 then). */
function randomHex(bytes: number): string {
  if (pooled + bytes > POOL.length) {
    randomFillSync(POOL);
    poolHex = POOL.toString('hex');
    pooled = 0;
  }
  const start = pooled;
  pooled += bytes;
  for (let i = start; i < pooled; i++) if (POOL[i] !== 0) return poolHex.slice(2 * start, 2 * pooled);
  POOL[pooled - 1] = 1;
  return POOL.toString('hex', start, pooled);
}

/**
 * The SDK's IdGenerator with ids from a pool of crypto random bytes: the SDK's RandomIdGenerator
 * writes Math.random() four bytes at a time into a shared buffer per id, about twice the CPU.
 * The same shapes (16 and 8 bytes as lowercase hex, never all zeros, as its generator ensures).
 */
export class PooledIdGenerator implements IdGenerator {
  generateTraceId(): string {
    return randomHex(16);
  }

  generateSpanId(): string {
    return randomHex(8);
  }
}

/** What starts spans: the sampler, the ids, the limits and where ended spans go. */
export class LeanTracer {
  /** The ids (the SDK's IdGenerator interface: another generator may be given to the tracer). */
  ids: IdGenerator = new PooledIdGenerator();
  /**
   * Called on each recorded span as it ends: what it returns goes to the processor in the span's
   * place. otlp-proto.ts's encodeAtEnd when the exporter is its protobuf one: the span is written
   * into bytes then and the processor gets an EncodedSpan (five fields and a slice of a byte slab)
   * instead of the span with its ids, attributes and events, so a span waiting for its batch is
   * one small object the garbage collector copies or promotes (about 60 bytes against ~350).
   */
  encode: ((span: LeanSpan) => ReadableSpan) | undefined;

  constructor(
    readonly resource: Resource,
    readonly scope: InstrumentationScope,
    readonly sampler: Sampler,
    readonly processor: SpanProcessor,
    readonly limits: LeanLimits,
  ) {}

  /**
   * performance.now() to epoch milliseconds. Read once a second at most, and only from a reading
   * whose two sides of Date.now() are under a millisecond apart: a thread preempted between the
   * two clocks (a loaded box) would shift every time of the span that read them, so that a child
   * could end after its parent (seen: 12.8 ms).
   */
  private clockBase = Date.now() - performance.now();
  private clockReadAt = -Infinity;

  /**
   * The epoch offset of the monotonic clock a new span without a local parent uses; `t0`:
   * performance.now() read by the caller (the span's start).
   */
  clock(t0: number): number {
    if (t0 - this.clockReadAt < 1000) return this.clockBase;
    const wall = Date.now();
    const t1 = performance.now();
    if (t1 - t0 < 1) {
      this.clockBase = wall - t0;
      this.clockReadAt = t0;
    }
    return this.clockBase;
  }

  /**
   * True when the sampler is known to sample every child of a sampled span of this process with
   * its parent's trace state, so that it is asked once per trace (for the request's server span)
   * and not again for each attempt. sdk.ts sets it: every sampler it configures does so (the
   * parent-based ones by their default `localParentSampled`, AlwaysOn; `traceidratio` because it
   * decides by the trace id, which the child shares; `always_on` always; `always_off` samples no
   * parent). Another sampler given to the tracer (false) is asked for every span.
   */
  sampledChildren = false;

  /**
   * A span named `name` under `parent` (a valid span context, or none: a new trace), sampled by
   * the SDK's sampler given `context` (the context holding that parent, as the SDK's Tracer gives
   * it; undefined: a ParentContext of `parent`, made only when the sampler is asked). A span the
   * sampler does not record still has its ids (its traceparent goes upstream) and ignores
   * everything else.
   */
  start(
    name: string,
    kind: SpanKind,
    context: Context | undefined,
    parent: SpanContext | undefined,
  ): LeanSpan {
    const spanId = this.ids.generateSpanId();
    if (
      this.sampledChildren &&
      parent instanceof LeanSpan &&
      parent.recording &&
      (parent.traceFlags & SAMPLED) !== 0
    )
      return new LeanSpan(this, name, kind, parent.traceId, spanId, SAMPLED, parent.traceState, parent, true);
    const traceId = parent ? parent.traceId : this.ids.generateTraceId();
    const result = this.sampler.shouldSample(
      context ?? (parent ? new ParentContext(parent) : ROOT_CONTEXT),
      traceId,
      name,
      kind,
      NO_ATTRIBUTES,
      NO_LINKS,
    );
    return this.made(name, kind, traceId, spanId, result, parent);
  }

  /**
   * start() for a span whose parent is remote or none (a request's server span), except that
   * a span the sampler neither records nor gives a trace state of its own is not made: its trace
   * id comes back instead (the parent's, or a new one), and nothing else was built for it (no
   * span id, no span). A request left out by the sampler then costs the sampler's verdict.
   */
  startOrSkip(name: string, kind: SpanKind, parent: SpanContext | undefined): LeanSpan | string {
    const traceId = parent ? parent.traceId : this.ids.generateTraceId();
    const result = this.sampler.shouldSample(
      parent ? new ParentContext(parent) : ROOT_CONTEXT,
      traceId,
      name,
      kind,
      NO_ATTRIBUTES,
      NO_LINKS,
    );
    if (result.decision === SamplingDecision.NOT_RECORD && result.traceState === undefined) return traceId;
    return this.made(name, kind, traceId, this.ids.generateSpanId(), result, parent);
  }

  /** The span the sampler's `result` asked for. */
  private made(
    name: string,
    kind: SpanKind,
    traceId: string,
    spanId: string,
    result: SamplingResult,
    parent: SpanContext | undefined,
  ): LeanSpan {
    const decision = result.decision;
    const span = new LeanSpan(
      this,
      name,
      kind,
      traceId,
      spanId,
      decision === SamplingDecision.RECORD_AND_SAMPLED ? SAMPLED : 0,
      result.traceState ?? parent?.traceState,
      parent,
      decision !== SamplingDecision.NOT_RECORD,
    );
    if (span.recording && result.attributes)
      for (const key in result.attributes) span.setAttribute(key, result.attributes[key]);
    return span;
  }
}

/**
 * One span, and its own SpanContext (`spanContext()` returns it: the traceparent, the processor's
 * sampled check and a child's parent read the same fields).
 */
export class LeanSpan implements ReadableSpan, SpanContext {
  readonly resource: Resource;
  readonly instrumentationScope: InstrumentationScope;
  /** Epoch milliseconds at the start and the end (0 until it ends). */
  readonly startMs: number;
  endMs = 0;
  /** performance.now() to epoch milliseconds, fixed at the start (LeanTracer.clock). */
  readonly base: number;
  /**
   * The attributes, key and value in turn (k0, v0, k1, v1, ...), `attributeCount` of them: one
   * array made at the first attribute with room for ATTRIBUTE_ROOM of them (a request's spans
   * have 14-19), where two arrays grown by push were reallocated twice each.
   */
  attrs: unknown[] | undefined;
  attributeCount = 0;
  droppedAttributesCount = 0;
  leanEvents: LeanEvent[] | undefined;
  droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  readonly links: Link[] = NO_LINKS;
  statusCode = STATUS_UNSET;
  statusMessage: string | undefined;
  ended = false;
  private attributesObject: Attributes | undefined;

  constructor(
    private readonly tracer: LeanTracer,
    readonly name: string,
    readonly kind: SpanKind,
    readonly traceId: string,
    readonly spanId: string,
    readonly traceFlags: number,
    readonly traceState: TraceState | undefined,
    readonly parentSpanContext: SpanContext | undefined,
    /** The sampler's verdict: false, and nothing is kept (only the ids, for the traceparent). */
    readonly recording: boolean,
    /** A span read back from the span log (span-log.ts): its start, in epoch milliseconds. */
    startMs?: number,
  ) {
    this.resource = tracer.resource;
    this.instrumentationScope = tracer.scope;
    if (startMs !== undefined) {
      this.base = 0;
      this.startMs = startMs;
      return;
    }
    // A child of a span of this process keeps its parent's clock: the times of one trace stay on
    // one monotonic clock, so a child never ends after its parent by a clock's correction.
    const t0 = performance.now();
    this.base = parentSpanContext instanceof LeanSpan ? parentSpanContext.base : tracer.clock(t0);
    this.startMs = t0 + this.base;
  }

  /** Epoch milliseconds now, on this span's clock. */
  now(): number {
    return performance.now() + this.base;
  }

  spanContext(): SpanContext {
    return this;
  }

  isRecording(): boolean {
    return this.recording && !this.ended;
  }

  /** The value as the limits allow it. */
  private cut(value: AttributeValue): AttributeValue {
    const limit = this.tracer.limits.attributeValueLength;
    // A cut is a copy of its own: a slice would hold the whole value (a prompt of MBs with the
    // content opt-in, a client's model name) for as long as the span waits in the export queue.
    if (typeof value === 'string') return value.length > limit ? ownString(value.slice(0, limit)) : value;
    if (Array.isArray(value)) {
      let long = false;
      for (const v of value) if (typeof v === 'string' && v.length > limit) long = true;
      if (long)
        return (value as unknown[]).map((v) =>
          typeof v === 'string' && v.length > limit ? ownString(v.slice(0, limit)) : v,
        ) as AttributeValue;
    }
    return value;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (!this.recording || this.ended || value == null || key.length === 0) return this;
    const attrs = (this.attrs ??= new Array(2 * ATTRIBUTE_ROOM));
    const n = 2 * this.attributeCount;
    for (let i = 0; i < n; i += 2)
      if (attrs[i] === key) {
        attrs[i + 1] = this.cut(value);
        this.attributesObject = undefined;
        return this;
      }
    if (this.attributeCount >= this.tracer.limits.attributeCount) {
      this.droppedAttributesCount++;
      return this;
    }
    attrs[n] = key;
    attrs[n + 1] = this.cut(value);
    this.attributeCount++;
    this.attributesObject = undefined;
    return this;
  }

  /**
   * An event now. `attributes` is kept as given when the limits leave it whole (the callers
   * build a fresh object per event and never touch it again), else a trimmed copy.
   */
  addEvent(name: string, attributes?: Attributes, ms?: number): this {
    if (!this.recording || this.ended) return this;
    const limits = this.tracer.limits;
    if (limits.eventCount === 0) {
      this.droppedEventsCount++;
      return this;
    }
    const events = (this.leanEvents ??= []);
    if (events.length >= limits.eventCount) {
      events.shift();
      this.droppedEventsCount++;
    }
    let kept = attributes;
    let dropped = 0;
    if (attributes) {
      let count = 0;
      let whole = true;
      for (const key in attributes) {
        const v = attributes[key];
        count++;
        if (
          v == null ||
          count > limits.attributePerEventCount ||
          (typeof v === 'string' && v.length > limits.attributeValueLength) ||
          Array.isArray(v)
        )
          whole = false;
      }
      if (!whole) {
        const copy: Attributes = {};
        let n = 0;
        for (const key in attributes) {
          const v = attributes[key];
          if (v == null) continue;
          if (n >= limits.attributePerEventCount) {
            dropped++;
            continue;
          }
          copy[key] = this.cut(v);
          n++;
        }
        kept = copy;
      }
    }
    events.push(new LeanEvent(name, ms ?? this.now(), kept, dropped));
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.recording || this.ended || status.code === STATUS_UNSET || this.statusCode === STATUS_OK)
      return this;
    this.statusCode = status.code;
    this.statusMessage =
      status.code === STATUS_ERROR && typeof status.message === 'string' ? status.message : undefined;
    return this;
  }

  /** Ends the span and hands it to the processor (once; a span not recorded goes nowhere). */
  end(): void {
    if (this.finish()) this.handOver();
  }

  /**
   * Ends the span without handing it over yet (handOver, later: sdk.ts hands a request's ended
   * attempt spans over with its server span, one after the other, while the code is warm).
   * False when it had ended already or records nothing.
   */
  finish(): boolean {
    if (this.ended) return false;
    this.ended = true;
    if (!this.recording) return false;
    this.endMs = Math.max(this.now(), this.startMs);
    return true;
  }

  /** Ends a span read back from the span log at its recorded end (nothing handed over). */
  endAt(endMs: number): void {
    this.ended = true;
    this.endMs = endMs;
  }

  /** An ended span to the processor (encoded first when the tracer says so). */
  handOver(): void {
    const encode = this.tracer.encode;
    this.tracer.processor.onEnd(encode ? encode(this) : this);
  }

  // ReadableSpan, in the SDK's shapes (built when read: the protobuf path reads the fields above).

  get attributes(): Attributes {
    if (this.attributesObject === undefined) {
      const out: Attributes = {};
      const attrs = this.attrs;
      for (let i = 0; i < 2 * this.attributeCount; i += 2)
        out[attrs![i] as string] = attrs![i + 1] as AttributeValue;
      this.attributesObject = out;
    }
    return this.attributesObject;
  }

  get events(): TimedEvent[] {
    return this.leanEvents ?? NO_EVENTS;
  }

  get status(): SpanStatus {
    return this.statusMessage === undefined
      ? { code: this.statusCode }
      : { code: this.statusCode, message: this.statusMessage };
  }

  get startTime(): HrTime {
    return hrOf(this.startMs);
  }

  get endTime(): HrTime {
    return hrOf(this.endMs);
  }

  get duration(): HrTime {
    return hrOf(this.endMs - this.startMs);
  }
}

/** A recorded span read back from the span log (span-log.ts), started at `startMs`. */
export function leanSpanOf(
  tracer: LeanTracer,
  name: string,
  kind: SpanKind,
  traceId: string,
  spanId: string,
  traceFlags: number,
  traceState: TraceState | undefined,
  parent: SpanContext | undefined,
  startMs: number,
): LeanSpan {
  return new LeanSpan(tracer, name, kind, traceId, spanId, traceFlags, traceState, parent, true, startMs);
}
