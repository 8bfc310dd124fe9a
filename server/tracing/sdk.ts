/**
 * Tracing with the OpenTelemetry JS SDK, loaded only when the environment asks for it
 * (index.ts imports this module dynamically). Spans are made explicitly, never by
 * auto-instrumentation (an http/undici instrumentation would add spans of its own and cost every
 * request): a SERVER span per request that continues the client's `traceparent`, and a CLIENT
 * span per upstream attempt whose own `traceparent` goes upstream, so that vLLM's engine span
 * nests under it. Nothing global is registered (no global provider, propagator or context
 * manager): the spans' parents are passed explicitly, and several apps in one process (tests)
 * each keep their own provider.
 */
import { type Attributes, type SpanContext, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ExportResultCode, getNumberFromEnv } from '@opentelemetry/core';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_PATH,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import { describeEffect, type PolicyEffect } from '../../policies/registry.js';
import type { ChatCall } from '../chat/context.js';
import { callUsage } from '../chat/pipeline.js';
import { redactForLog } from '../log-redact.js';
import { ownString } from '../../protocol/own-string.js';
import type { UpstreamResponse } from '../upstream.js';
import {
  completionMessages,
  GEN_AI,
  inputMessages,
  PROVIDER,
  setRequestAttributes,
  streamedMessages,
} from './genai.js';
import { type LeanLimits, type LeanSpan, LeanTracer, remoteParent } from './lean.js';
import type { TracingSettings } from './settings.js';
import type { EventValue, RequestSpan, TracedReport, Tracing } from './types.js';

/**
 * A name of the client's or the model's (a model, a tool, a user agent) as an attribute: at most
 * 256 characters, a copy of its own when cut (a slice would hold the whole name, of any length,
 * while the span waits in the export queue, and for good in Server's names).
 */
function cut256(s: string): string {
  return s.length > 256 ? ownString(s.slice(0, 256)) : s;
}

/** The most finish reasons an attempt span keeps (one per choice: n is far below). */
const MAX_FINISH_REASONS = 128;

/** Routes that get no span: probes and scrapes would drown the requests in traces. */
const UNTRACED = new Set(['/health', '/ready', '/metrics', '/api/hello']);

function samplerOf(s: TracingSettings['sampler']): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(s.arg ?? 1);
  switch (s.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

async function exporterOf(settings: TracingSettings): Promise<SpanExporter> {
  // Only the protocol's exporter is loaded. Headers, timeout, compression and certificates come
  // from their OTEL_EXPORTER_OTLP_* variables, read by the exporter itself.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url: settings.endpoint });
  }
  // The library's protobuf exporter with a one-pass serializer of the same bytes (otlp-proto.ts).
  const { protobufSpanExporter } = await import('./otlp-proto.js');
  return protobufSpanExporter(settings.endpoint);
}

/** With the protobuf exporter, spans are written into bytes as they end (otlp-proto.ts). */
async function encoderOf(settings: TracingSettings): Promise<((span: LeanSpan) => ReadableSpan) | undefined> {
  if (settings.protocol === 'http/json') return undefined;
  const { encodeAtEnd } = await import('./otlp-proto.js');
  return encodeAtEnd;
}

/**
 * The SDK's span limits from the environment, as its TracerProvider reads them (the span's own
 * variable first, then the general one, then the default), the value length from settings.ts.
 */
function limitsOf(settings: TracingSettings): LeanLimits {
  const count = (name: string, general?: string) =>
    getNumberFromEnv(name) ?? (general === undefined ? undefined : getNumberFromEnv(general)) ?? 128;
  return {
    attributeValueLength: settings.attributeValueLengthLimit,
    attributeCount: count('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', 'OTEL_ATTRIBUTE_COUNT_LIMIT'),
    eventCount: count('OTEL_SPAN_EVENT_COUNT_LIMIT'),
    attributePerEventCount: count('OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT'),
  };
}

/** How often at most a failing export is said in the log. */
const EXPORT_WARN_MS = 60_000;

/**
 * `exporter`, saying in the log when its exports fail (a collector down, mute or refusing):
 * the spans are lost either way, and the SDK says it only through its diag logger, which
 * toolproof does not register (nothing global): a wrong endpoint was silent. At most one line a
 * minute, with the spans lost since the last.
 */
function reporting(exporter: SpanExporter, endpoint: string, warn: (message: string) => void): SpanExporter {
  let lost = 0;
  let failures = 0;
  let lastWarn = Number.NEGATIVE_INFINITY;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) {
          lost += spans.length;
          failures++;
          const now = performance.now();
          if (now - lastWarn >= EXPORT_WARN_MS) {
            lastWarn = now;
            const why = result.error?.message ?? 'failed';
            warn(
              `tracing: ${lost} span${lost === 1 ? '' : 's'} in ${failures} export${failures === 1 ? '' : 's'} could not be sent to ${endpoint} (${why.slice(0, 200)}); said at most once a minute`,
            );
            lost = 0;
            failures = 0;
          }
        }
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    shutdown: () => exporter.shutdown(),
  };
}

/** The endpoint as a log line may show it: no user, password or query (a token in it). */
function shown(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(the OTLP endpoint)';
  }
}

export async function createTracing(
  settings: TracingSettings,
  warn?: (message: string) => void,
): Promise<Tracing<ChatCall>> {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'toolproof', 'process.pid': process.pid }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over toolproof's own.
    .merge(detectResources({ detectors: [envDetector] }));
  // The SDK's batch processor (OTEL_BSP_* read by it; bounded: a full queue drops spans; the
  // defaults: 2048 queued, 512 a batch, every 5 s), its sampler and its exporter; the spans are
  // lean.ts's (the SDK's Tracer and Span cost more than the rest of tracing together).
  const exporter = await exporterOf(settings);
  const processor = new BatchSpanProcessor(
    warn ? reporting(exporter, shown(settings.endpoint), warn) : exporter,
  );
  const tracer = new LeanTracer(
    resource,
    { name: 'toolproof', version: undefined, schemaUrl: undefined },
    samplerOf(settings.sampler),
    processor,
    limitsOf(settings),
  );
  tracer.encode = await encoderOf(settings);
  // Every sampler samplerOf makes samples a child of a sampled span: asked once per trace.
  tracer.sampledChildren = true;
  let closed: Promise<void> | undefined;
  return {
    startRequest(request, route) {
      if (route !== undefined && (UNTRACED.has(route) || route === '/docs' || route.startsWith('/docs/')))
        return undefined;
      const remote = remoteParent(request.headers);
      const matched = route !== undefined && route !== '*' && route !== '/*';
      const name = matched ? spanName(request.method, route) : request.method;
      // The sampler's context holds the client's span (a ParentContext, made only when one came).
      // The attributes are written when the span ends (ServerSpan.describeEnd), from the request.
      const span = tracer.startOrSkip(name, SpanKind.SERVER, remote);
      if (typeof span === 'string') return unsampled(tracer, span, remote, request.headers);
      return new ServerSpan(tracer, span, settings.captureContent, matched ? route : undefined);
    },
    flush: () => processor.forceFlush(),
    shutdown: () => {
      closed ??= processor.shutdown();
      return closed;
    },
  };
}

/** `POST <route>` by route (a closed set: the app's route patterns), made once. */
const POST_NAMES = new Map<string, string>();
function spanName(method: string, route: string): string {
  if (method !== 'POST') return `${method} ${route}`;
  let name = POST_NAMES.get(route);
  if (name === undefined) {
    name = `POST ${route}`;
    if (POST_NAMES.size < 256) POST_NAMES.set(route, name);
  }
  return name;
}

/**
 * The span of a request the sampler left out (startOrSkip made none): what the upstream is
 * owed, a traceparent saying the trace is not sampled (flags 00) with the client's trace and
 * span ids (a trace of its own and a span id when the client sent none), and the client's
 * tracestate. Nothing else: no attribute, event or attempt span.
 */
function unsampled(
  tracer: LeanTracer,
  traceId: string,
  remote: SpanContext | undefined,
  headers: FastifyRequest['headers'],
): RequestSpan<ChatCall> {
  if (!remote)
    return new UnsampledSpan(traceId, `00-${traceId}-${tracer.ids.generateSpanId()}-00`, undefined, false);
  const state = remote.traceState?.serialize();
  const sent = headers.traceparent;
  // The client's header says it already (version 00, flags 00, no tracestate to rewrite): the
  // call's headers, which carry it, go upstream as they are.
  if (
    typeof sent === 'string' &&
    sent.length === 55 &&
    sent.startsWith('00-') &&
    sent.endsWith('-00') &&
    state === undefined &&
    headers.tracestate === undefined
  )
    return new UnsampledSpan(traceId, sent, undefined, true);
  return new UnsampledSpan(traceId, `00-${traceId}-${remote.spanId}-00`, state, false);
}

class UnsampledSpan implements RequestSpan<ChatCall> {
  readonly captureContent = false;
  constructor(
    readonly traceId: string,
    /** The traceparent and tracestate that go upstream. */
    private readonly traceparent: string,
    private readonly tracestate: string | undefined,
    /** The client's headers carry them as they are (the chat call's forwarded headers do). */
    private readonly asSent: boolean,
  ) {}

  chat(): void {}

  attempt(
    _call: ChatCall,
    _request: ChatCompletionRequest,
    headers: Record<string, string>,
  ): Record<string, string> {
    return this.asSent ? headers : withTraceContext(headers, this.traceparent, this.tracestate);
  }

  attemptOpened(): void {}
  attemptThrew(): void {}
  attemptRejected(): void {}
  finishReason(): void {}
  attemptOutput(): void {}
  attemptRead(): void {}
  effects(): void {}
  event(): void {}

  inject(headers: Record<string, string>): void {
    delete headers.tracestate;
    headers.traceparent = this.traceparent;
    if (this.tracestate !== undefined) headers.tracestate = this.tracestate;
  }

  end(): void {}
}

/** The tallies' event names (policies/types.ts EffectTallyName). */
const TALLY_EVENTS: Record<string, string> = {
  repairs: 'toolproof.history_repair',
  normalizations: 'toolproof.normalization',
  constraints: 'toolproof.client_constraint',
  finalAnswerProblems: 'toolproof.final_answer_problem',
};

/**
 * The W3C `traceparent` (and `tracestate`) naming `span`, written into `carrier`: what
 * W3CTraceContextPropagator.inject writes for a context holding the span, without a Context made
 * for it (a Map copied per attempt). Every span here has a valid context (the SDK's ids, or the
 * client's checked by extract) and nothing suppresses tracing.
 */
/** The traceparent's flags field for the usual flags (not sampled, sampled). */
const FLAGS = ['00', '01'];

function traceparentOf(span: LeanSpan): string {
  const flags = span.traceFlags & 0xff;
  return `00-${span.traceId}-${span.spanId}-${flags < 2 ? FLAGS[flags] : flags.toString(16).padStart(2, '0')}`;
}

function writeTraceContext(span: LeanSpan, carrier: Record<string, string>): void {
  carrier.traceparent = traceparentOf(span);
  if (span.traceState) carrier.tracestate = span.traceState.serialize();
}

/**
 * `headers` with the client's traceparent and tracestate replaced by `traceparent` and
 * `tracestate`, where they stood (before content-type, which upstream.ts expects last).
 */
function withTraceContext(
  headers: Record<string, string>,
  traceparent: string,
  tracestate: string | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  let injected = false;
  for (const name in headers) {
    if (name === 'traceparent' || name === 'tracestate') continue;
    if (name === 'content-type' && !injected) {
      injected = true;
      out.traceparent = traceparent;
      if (tracestate !== undefined) out.tracestate = tracestate;
    }
    out[name] = headers[name]!;
  }
  if (!injected) {
    out.traceparent = traceparent;
    if (tracestate !== undefined) out.tracestate = tracestate;
  }
  return out;
}

function setUsage(span: LeanSpan, usage: Usage | undefined): void {
  if (!usage) return;
  if (typeof usage.prompt_tokens === 'number') span.setAttribute(GEN_AI.inputTokens, usage.prompt_tokens);
  if (typeof usage.completion_tokens === 'number')
    span.setAttribute(GEN_AI.outputTokens, usage.completion_tokens);
  const cached = (usage.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)
    ?.cached_tokens;
  if (typeof cached === 'number') span.setAttribute(GEN_AI.cacheReadTokens, cached);
}

function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : (err as Error | undefined)?.name || 'Error';
}

function errorMessage(err: unknown): string {
  const message = (err as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? redactForLog(message) : '';
}

/**
 * A request's spans. Their attributes are written as each span ends, from what the request and
 * the attempt hold then (the call, the request as sent, a few numbers kept on the way), not set
 * one by one while the request runs: a request in flight then keeps no attribute arrays, which
 * every scavenge during it copied (a traced server's garbage collector worked about a third more
 * per request than an untraced one's, bench/tracing-twin.ts), and the values written are those
 * the call ends with. Events are added as they happen (their time is theirs).
 */
class ServerSpan implements RequestSpan<ChatCall> {
  private call: ChatCall | undefined;
  /** The attempt span open now (at most one: attempts are sequential). */
  private attemptSpan: LeanSpan | undefined;
  /** The open attempt's request as sent, its model and its upstream: written when it ends. */
  private attemptRequest: ChatCompletionRequest | undefined;
  private attemptModel = '';
  private attemptServer: Server | undefined;
  /** Its response's status and time to headers (-1: none yet). */
  private attemptStatus = -1;
  private attemptHeadersMs = -1;
  private reasons: string[] | undefined;
  private payloads: readonly string[] | undefined;
  private attempts = 0;
  /** Attempt spans ended, not handed over yet (one, or several after a retry). */
  private endedAttempts: LeanSpan | LeanSpan[] | undefined;
  private ended = false;

  /** Sampled: a request the sampler left out costs no attribute, event or attempt span. */
  private readonly recording: boolean;
  readonly captureContent: boolean;

  constructor(
    private readonly tracer: LeanTracer,
    private readonly span: LeanSpan,
    captureContent: boolean,
    /** The matched route pattern (`http.route`), when one matched. */
    private readonly route: string | undefined,
  ) {
    this.recording = span.recording;
    this.captureContent = captureContent && this.recording;
  }

  get traceId(): string {
    return this.span.traceId;
  }

  chat(call: ChatCall): void {
    this.call = call;
  }

  /** The request's attributes (written as the server span ends). */
  private describeRequest(request: FastifyRequest): void {
    const span = this.span;
    span.setAttribute(ATTR_HTTP_REQUEST_METHOD, request.method);
    const url = request.url;
    const query = url.indexOf('?');
    span.setAttribute(ATTR_URL_PATH, cut256(query < 0 ? url : url.slice(0, query)));
    if (this.route !== undefined) span.setAttribute(ATTR_HTTP_ROUTE, this.route);
    const agent = request.headers['user-agent'];
    if (typeof agent === 'string') span.setAttribute(ATTR_USER_AGENT_ORIGINAL, cut256(agent));
    const call = this.call;
    if (!call) return;
    // The chat call's: what the client asked for, where it went.
    const r = call.original;
    span.setAttribute(GEN_AI.operation, 'chat');
    span.setAttribute(GEN_AI.provider, PROVIDER);
    span.setAttribute(GEN_AI.requestModel, typeof r.model === 'string' ? cut256(r.model) : '');
    setRequestAttributes(span, r);
    span.setAttribute('toolproof.api', call.api);
    span.setAttribute('toolproof.model', cut256(call.route.name));
    span.setAttribute('toolproof.upstream', call.route.client.label);
    span.setAttribute('toolproof.stream', r.stream === true);
    const conversation = call.forwardHeaders['x-conversation-id'];
    if (conversation) span.setAttribute(GEN_AI.conversationId, cut256(conversation));
    if (this.captureContent) span.setAttribute(GEN_AI.inputMessages, inputMessages(r));
  }

  attempt(
    call: ChatCall,
    request: ChatCompletionRequest,
    headers: Record<string, string>,
  ): Record<string, string> {
    this.closeAttempt('superseded'); // never: each attempt ends before the next (defensive)
    this.attempts++;
    // Not sampled: the upstream is told so (the server span's context, flags 00), nothing is built.
    if (!this.recording) return this.propagate(this.span, headers);
    const upstreamModel = call.route.upstreamModel ?? request.model;
    const model = typeof upstreamModel === 'string' ? cut256(upstreamModel) : '';
    const server = serverOf(call.route.client.origin);
    // A child of a sampled span is sampled (parent-based) or not (a ratio sampler). Its
    // attributes are written as it ends (describeAttempt), from what is kept here.
    const span = this.tracer.start(server.name(model), SpanKind.CLIENT, undefined, this.span);
    this.attemptSpan = span;
    this.attemptRequest = request;
    this.attemptModel = model;
    this.attemptServer = server;
    this.attemptStatus = -1;
    this.attemptHeadersMs = -1;
    this.reasons = undefined;
    this.payloads = undefined;
    return this.propagate(span, headers);
  }

  /** The open attempt's request and response attributes (written as its span ends). */
  private describeAttempt(span: LeanSpan): void {
    const request = this.attemptRequest;
    this.attemptRequest = undefined;
    if (!request || !span.recording) return;
    span.setAttribute(GEN_AI.operation, 'chat');
    span.setAttribute(GEN_AI.provider, PROVIDER);
    span.setAttribute(GEN_AI.requestModel, this.attemptModel);
    setRequestAttributes(span, request);
    span.setAttribute('toolproof.attempt', this.attempts);
    // The replica that answered, else the upstream it was sent to.
    this.attemptServer?.set(span);
    if (typeof request.tool_choice === 'string')
      span.setAttribute('toolproof.tool_choice', request.tool_choice);
    if (this.captureContent) span.setAttribute(GEN_AI.inputMessages, inputMessages(request));
    if (this.attemptStatus >= 0) {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, this.attemptStatus);
      // Time to the response headers: queue and prefill (an attribute: cheaper than an event).
      span.setAttribute('toolproof.upstream.headers_ms', this.attemptHeadersMs);
    }
  }

  /**
   * `headers` with the client's traceparent and tracestate replaced by `span`'s, where they
   * stood (before content-type, which upstream.ts expects last).
   */
  private propagate(span: LeanSpan, headers: Record<string, string>): Record<string, string> {
    return withTraceContext(headers, traceparentOf(span), span.traceState?.serialize());
  }

  attemptOpened(res: UpstreamResponse): void {
    if (!this.attemptSpan?.recording) return;
    this.attemptStatus = res.status;
    const span = this.attemptSpan;
    this.attemptHeadersMs = Math.round((span.now() - span.startMs) * 10) / 10;
    if (res.replica) this.attemptServer = serverOf(res.replica);
  }

  attemptThrew(err: unknown, aborted: boolean): void {
    if (aborted) this.closeAttempt('client_aborted');
    else this.failAttempt(errorType(err), errorMessage(err));
  }

  attemptRejected(status: number, body: unknown): void {
    const message = (body as { error?: { message?: unknown } } | null | undefined)?.error?.message;
    this.failAttempt(
      String(status),
      typeof message === 'string' ? redactForLog(message) : `status ${status}`,
    );
  }

  finishReason(reason: string): void {
    if (!this.attemptSpan) return;
    // The upstream's word, of any type and as often as it likes (on every chunk of a million):
    // a string, cut, and at most one per choice a stream can carry.
    const reasons = (this.reasons ??= []);
    if (reasons.length < MAX_FINISH_REASONS)
      reasons.push(typeof reason === 'string' ? cut256(reason) : String(reason).slice(0, 64));
  }

  attemptOutput(payloads: readonly string[]): void {
    this.payloads = payloads;
  }

  attemptRead(report: TracedReport): void {
    const span = this.attemptSpan;
    if (!span) return;
    this.describeAttempt(span);
    setUsage(span, report.usage);
    const identity = this.call?.streamIdentity;
    let output: string | undefined;
    let model: string | undefined;
    if (report.kind === 'completion' && report.completion) {
      const c = report.completion;
      if (typeof c.model === 'string') model = c.model;
      if (typeof c.id === 'string') span.setAttribute(GEN_AI.responseId, c.id);
      const reasons = (c.choices ?? []).map((ch) => ch?.finish_reason).filter((f) => typeof f === 'string');
      if (reasons.length > 0) span.setAttribute(GEN_AI.finishReasons, reasons as string[]);
      if (this.captureContent) output = completionMessages(c);
    } else {
      // A stream: its identity is the last one its chunks named (noteIdentity).
      if (identity && this.call?.original.stream === true && identity.id !== 'chatcmpl-toolproof') {
        model = identity.model;
        span.setAttribute(GEN_AI.responseId, identity.id);
      }
      if (this.reasons) span.setAttribute(GEN_AI.finishReasons, this.reasons);
      if (this.captureContent && this.payloads) output = streamedMessages(this.payloads);
    }
    if (output !== undefined) span.setAttribute(GEN_AI.outputMessages, output);
    if (typeof model === 'string') span.setAttribute(GEN_AI.responseModel, model);
    if (report.kind === 'failed') this.failAttempt(errorType(report.error), errorMessage(report.error));
    else this.closeAttempt();
  }

  effects(effects: readonly PolicyEffect[], attempt: number): void {
    if (!this.recording) return;
    for (const e of effects) {
      const r = describeEffect(e);
      const attributes: Attributes = { 'toolproof.policy': e.policy, 'toolproof.attempt': attempt };
      if (!r) {
        attributes['toolproof.effect'] = e.kind;
        this.span.addEvent('toolproof.effect', attributes);
        continue;
      }
      switch (r.type) {
        case 'tally':
          attributes['toolproof.kind'] = r.key;
          attributes['toolproof.count'] = r.count;
          this.span.addEvent(TALLY_EVENTS[r.tally] ?? `toolproof.${r.tally}`, attributes);
          break;
        case 'forced':
          attributes['toolproof.tool_choice'] = r.toolChoice;
          this.span.addEvent('toolproof.forced', attributes);
          break;
        case 'final-answer':
          this.span.addEvent('toolproof.final_answer', attributes);
          break;
        case 'forced-but-prose':
          this.span.addEvent('toolproof.forced_but_prose', attributes);
          break;
        case 'leak':
          attributes['toolproof.leak.format'] = r.leak.format;
          attributes['toolproof.leak.source'] = r.leak.source;
          attributes['toolproof.leak.outcome'] = r.leak.outcome;
          if (r.leak.backendHint) attributes['toolproof.leak.backend_hint'] = r.leak.backendHint;
          if (r.leak.reason) attributes['toolproof.leak.reason'] = r.leak.reason;
          this.span.addEvent('toolproof.leak', attributes);
          break;
        case 'validation-failed':
          attributes['toolproof.tool'] = cut256(r.tool);
          attributes['toolproof.undeclared'] = r.undeclared;
          this.span.addEvent('toolproof.validation_failed', attributes);
          break;
        case 'schema-unenforced':
          attributes['toolproof.tool'] = cut256(r.tool);
          attributes['toolproof.cause'] = r.cause;
          attributes['toolproof.reasons'] = r.reasons;
          this.span.addEvent('toolproof.schema_unenforced', attributes);
          break;
        case 'retry':
          attributes['toolproof.retry.reason'] = r.reason;
          this.span.addEvent('toolproof.retry', attributes);
          break;
      }
    }
  }

  event(name: string, attributes?: Record<string, EventValue>): void {
    if (!this.recording) return;
    this.span.addEvent(name, attributes);
  }

  inject(headers: Record<string, string>): void {
    delete headers.traceparent;
    delete headers.tracestate;
    writeTraceContext(this.span, headers);
  }

  end(request: FastifyRequest, status: number, ended: boolean, headersSent = true): void {
    if (this.ended) return;
    this.ended = true;
    // Called from the response's 'close' listener: a throw here would take the process down.
    try {
      if (this.recording) this.describeEnd(request, status, ended, headersSent);
    } catch {
      // the span still ends, with what it had
    }
    // The request's ended attempt spans, then its own: one after the other, the encoder's and
    // the batch processor's code and tables warm for the second.
    const waiting = this.endedAttempts;
    if (waiting) {
      this.endedAttempts = undefined;
      if (Array.isArray(waiting)) for (const a of waiting) a.handOver();
      else waiting.handOver();
    }
    this.span.end();
  }

  /** An attempt span ended: handed over with the server span (end). */
  private attemptEnded(span: LeanSpan): void {
    if (!span.finish()) return;
    const ended = this.endedAttempts;
    if (ended === undefined) this.endedAttempts = span;
    else if (Array.isArray(ended)) ended.push(span);
    else this.endedAttempts = [ended, span];
  }

  private describeEnd(request: FastifyRequest, status: number, ended: boolean, headersSent: boolean): void {
    const span = this.span;
    const call = this.call;
    this.closeAttempt(ended ? 'unfinished' : 'client_aborted');
    this.describeRequest(request);
    span.setAttribute('toolproof.request_id', request.id);
    if (ended || headersSent) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (call) {
      const t = call.trace;
      setUsage(span, callUsage(call));
      span.setAttribute('toolproof.attempts', t.attempts);
      // What did not happen is not written, nor what another attribute or an event already says
      // (forced: toolproof.tool_choice, set only then, and the toolproof.forced event; the final
      // answer: toolproof.final_kind and its event; the response's model: the attempt spans'):
      // every attribute is paid for in each export, and past 19 the SDK keeps a span's attributes
      // in a slower dictionary (V8's limit for properties added by key), which costs its
      // setAttribute and both passes of the export.
      if (t.toolChoiceSent) span.setAttribute('toolproof.tool_choice', t.toolChoiceSent);
      if (t.fallback) span.setAttribute('toolproof.fallback', true);
      if (t.retries.length > 0) span.setAttribute('toolproof.retries', t.retries.length);
      if (t.leaks.length > 0) span.setAttribute('toolproof.leaks', t.leaks.length);
      if (t.finalKind) span.setAttribute('toolproof.final_kind', t.finalKind);
      if (t.droppedTools) span.setAttribute('toolproof.dropped_tools', t.droppedTools);
      if (call.discardedTokens > 0) span.setAttribute('toolproof.discarded_tokens', call.discardedTokens);
    } else setUsage(span, request.tp?.usage); // a relayed completion or embedding
    // Its tokens unknown (the log line's logRequest decided it): said, not left to read as 0.
    if (request.tp?.usageUnreported) span.setAttribute('toolproof.usage_unreported', true);
    const err: ToolproofError | undefined = request.tpError ?? call?.streamError;
    if (!ended) {
      // The client left first (nginx's 499): no status went out, or not all of the response.
      span.setAttribute(ATTR_ERROR_TYPE, 'client_aborted');
      span.addEvent('toolproof.client_aborted', { 'toolproof.headers_sent': headersSent });
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection first' });
    } else if (err) {
      span.setAttribute(ATTR_ERROR_TYPE, err.code);
      // A server span's 4xx is the client's fault, not an error of the span (HTTP conventions);
      // an error written into a stream after its 200 is one.
      if (status >= 500 || call?.streamError)
        span.setStatus({ code: SpanStatusCode.ERROR, message: redactForLog(err.message) });
    } else if (status >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }

  /** Ends the open attempt span; `why`, when it did not end by itself (client gone, ...). */
  private closeAttempt(why?: string): void {
    const span = this.attemptSpan;
    if (!span) return;
    this.attemptSpan = undefined;
    this.payloads = undefined;
    this.describeAttempt(span);
    if (why) {
      span.setAttribute(ATTR_ERROR_TYPE, why);
      span.setStatus({ code: SpanStatusCode.ERROR, message: why.replace('_', ' ') });
    }
    this.attemptEnded(span);
  }

  private failAttempt(type: string, message: string): void {
    const span = this.attemptSpan;
    if (!span) return;
    this.describeAttempt(span);
    span.setAttribute(ATTR_ERROR_TYPE, type);
    span.setStatus({ code: SpanStatusCode.ERROR, message });
    this.attemptSpan = undefined;
    this.payloads = undefined;
    this.attemptEnded(span);
  }
}

/** An upstream origin's server.address and server.port, and its attempt spans' names. */
class Server {
  private readonly names = new Map<string, string>();
  constructor(
    private readonly address: string | undefined,
    private readonly port: number | undefined,
  ) {}

  set(span: LeanSpan): void {
    if (this.address === undefined) return;
    span.setAttribute(ATTR_SERVER_ADDRESS, this.address);
    span.setAttribute(ATTR_SERVER_PORT, this.port!);
  }

  /** `chat <model>`, made once per model (a closed set: the routes' models, bounded anyway). */
  name(model: string): string {
    let name = this.names.get(model);
    if (name === undefined) {
      name = `chat ${model}`;
      if (this.names.size < 256) this.names.set(model, name);
    }
    return name;
  }
}

/** Each upstream origin's Server (a closed set: the configured replicas). */
const SERVERS = new Map<string, Server>();
function serverOf(origin: string): Server {
  let server = SERVERS.get(origin);
  if (server === undefined) {
    try {
      const url = new URL(origin);
      const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
      server = new Server(url.hostname, port);
    } catch {
      server = new Server(undefined, undefined);
    }
    if (SERVERS.size < 1024) SERVERS.set(origin, server);
  }
  return server;
}
