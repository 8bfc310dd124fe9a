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
import {
  type Attributes,
  isSpanContextValid,
  ROOT_CONTEXT,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type TraceState,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, getNumberFromEnv } from '@opentelemetry/core';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ConsoleSpanExporter,
  type IdGenerator,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
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
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import { describeEffect, type PolicyEffect } from '../../policies/registry.js';
import type { ChatCall } from '../chat/context.js';
import { callUsage } from '../chat/pipeline.js';
import { namedSessionKey } from '../affinity.js';
import { redactForLog } from '../log-redact.js';
import { ownString } from '../../protocol/own-string.js';
import type { UpstreamResponse } from '../upstream.js';
import {
  completionMessages,
  GEN_AI,
  inputMessages,
  toolDefinitions,
  PROVIDER,
  setRequestAttributes,
  streamedMessages,
} from './genai.js';
import { type LeanLimits, LeanTracer, ParentContext, remoteParent } from './lean.js';
import { keyOf, SpanLog } from './span-log.js';
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

/** The span log's indexes of the keys written below (looked up once). */
const K_GENAI_INPUTTOKENS = keyOf(GEN_AI.inputTokens);
const K_GENAI_OUTPUTTOKENS = keyOf(GEN_AI.outputTokens);
const K_GENAI_CACHEREADTOKENS = keyOf(GEN_AI.cacheReadTokens);
/** The GenAI conventions' token keys: an attempt's (the inference span's), or a relayed request's. */
const GENAI_USAGE = [K_GENAI_INPUTTOKENS, K_GENAI_OUTPUTTOKENS, K_GENAI_CACHEREADTOKENS] as const;
/**
 * A chat call's server span: its attempts' sum under toolproof's own names. Under gen_ai.usage.*
 * too, a GenAI backend summing a trace's spans (Langfuse, Dash0) counted every token twice.
 */
const TP_USAGE = [
  keyOf('toolproof.usage.input_tokens'),
  keyOf('toolproof.usage.output_tokens'),
  keyOf('toolproof.usage.cache_read.input_tokens'),
] as const;
const K_HTTP_REQUEST_METHOD = keyOf(ATTR_HTTP_REQUEST_METHOD);
const K_URL_PATH = keyOf(ATTR_URL_PATH);
const K_URL_SCHEME = keyOf(ATTR_URL_SCHEME);
const K_HTTP_ROUTE = keyOf(ATTR_HTTP_ROUTE);
const K_USER_AGENT_ORIGINAL = keyOf(ATTR_USER_AGENT_ORIGINAL);
const K_GENAI_OPERATION = keyOf(GEN_AI.operation);
const K_GENAI_PROVIDER = keyOf(GEN_AI.provider);
const K_GENAI_REQUESTMODEL = keyOf(GEN_AI.requestModel);
const K_TP_API = keyOf('toolproof.api');
const K_TP_MODEL = keyOf('toolproof.model');
const K_TP_UPSTREAM = keyOf('toolproof.upstream');
const K_GENAI_REQUESTSTREAM = keyOf(GEN_AI.stream);
const K_GENAI_CONVERSATIONID = keyOf(GEN_AI.conversationId);
const K_GENAI_INPUTMESSAGES = keyOf(GEN_AI.inputMessages);
const K_GENAI_TOOLDEFINITIONS = keyOf(GEN_AI.toolDefinitions);
const K_GENAI_REASONINGTOKENS = keyOf(GEN_AI.reasoningTokens);
const K_TP_REQUEST_MODEL = keyOf('toolproof.request.model');
const K_TP_STREAM = keyOf('toolproof.stream');
const K_TP_INPUTMESSAGES = keyOf('toolproof.input.messages');
const K_TP_ATTEMPT = keyOf('toolproof.attempt');
const K_TP_TOOL_CHOICE = keyOf('toolproof.tool_choice');
const K_HTTP_RESPONSE_STATUS_CODE = keyOf(ATTR_HTTP_RESPONSE_STATUS_CODE);
const K_TP_UPSTREAM_HEADERS_MS = keyOf('toolproof.upstream.headers_ms');
const K_GENAI_TIMETOFIRSTCHUNK = keyOf(GEN_AI.timeToFirstChunk);
const K_ERROR_TYPE = keyOf(ATTR_ERROR_TYPE);
const K_GENAI_FINISHREASONS = keyOf(GEN_AI.finishReasons);
const K_GENAI_OUTPUTMESSAGES = keyOf(GEN_AI.outputMessages);
const K_GENAI_RESPONSEMODEL = keyOf(GEN_AI.responseModel);
const K_TP_ATTEMPTS = keyOf('toolproof.attempts');
const K_TP_FALLBACK = keyOf('toolproof.fallback');
const K_TP_RETRIES = keyOf('toolproof.retries');
const K_TP_LEAKS = keyOf('toolproof.leaks');
const K_TP_FINAL_KIND = keyOf('toolproof.final_kind');
const K_TP_DROPPED_TOOLS = keyOf('toolproof.dropped_tools');
const K_TP_DISCARDED_TOKENS = keyOf('toolproof.discarded_tokens');
const K_TP_USAGE_UNREPORTED = keyOf('toolproof.usage_unreported');
const K_SERVER_ADDRESS = keyOf(ATTR_SERVER_ADDRESS);
const K_SERVER_PORT = keyOf(ATTR_SERVER_PORT);
const K_TP_REQUEST_ID = keyOf('toolproof.request_id');
const K_GENAI_RESPONSEID = keyOf(GEN_AI.responseId);
// The effects' event attributes (writeEffect).
const K_TP_POLICY = keyOf('toolproof.policy');
const K_TP_EFFECT = keyOf('toolproof.effect');
const K_TP_KIND = keyOf('toolproof.kind');
const K_TP_COUNT = keyOf('toolproof.count');
const K_TP_LEAK_FORMAT = keyOf('toolproof.leak.format');
const K_TP_LEAK_SOURCE = keyOf('toolproof.leak.source');
const K_TP_LEAK_OUTCOME = keyOf('toolproof.leak.outcome');
const K_TP_LEAK_BACKEND_HINT = keyOf('toolproof.leak.backend_hint');
const K_TP_LEAK_REASON = keyOf('toolproof.leak.reason');
const K_TP_TOOL = keyOf('toolproof.tool');
const K_TP_UNDECLARED = keyOf('toolproof.undeclared');
const K_TP_CAUSE = keyOf('toolproof.cause');
const K_TP_REASONS = keyOf('toolproof.reasons');
const K_TP_RETRY_REASON = keyOf('toolproof.retry.reason');

/** The most finish reasons an attempt span keeps (one per choice: n is far below). */
const MAX_FINISH_REASONS = 128;
/**
 * An attempt's gen_ai.response.finish_reasons when the upstream ended none of its choices
 * (docs/tracing.md): who ended it instead. The client left and toolproof cancelled it; toolproof
 * cut it off itself (early-stop.ts: a retry certain); it failed after its response opened (a cut,
 * an error event, a stall: error.type says which).
 */
const CLIENT_CLOSED_REASONS: readonly string[] = Object.freeze(['client_closed']);
const EARLY_STOP_REASONS: readonly string[] = Object.freeze(['early_stop']);
const ERROR_REASONS: readonly string[] = Object.freeze(['error']);

/** Routes that get no span: probes and scrapes would drown the requests in traces. */
const UNTRACED = new Set(['/health', '/ready', '/metrics', '/api/hello']);

/**
 * No span for the probes, the API's documentation, nor the inspector: its page reads its API
 * every 1-2 s while it is open, a span each, in the same traces as the requests it shows.
 */
function untraced(route: string): boolean {
  return (
    UNTRACED.has(route) ||
    route === '/docs' ||
    route.startsWith('/docs/') ||
    route === '/inspect' ||
    route.startsWith('/inspect/')
  );
}

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

const SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });
const NOT_SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.NOT_RECORD });

/**
 * The verdict of a sampler that needs no asking, as the SDK's gives it: always_on samples every
 * span; parentbased_always_on (the default) samples a root span and a child of a sampled remote
 * parent, and leaves out a child of one not sampled (its remoteParentNotSampled is always_off);
 * neither sets an attribute or a trace state. Undefined: ask the sampler (any other, or a parent
 * the SDK would not read as valid). Asking cost the request a context and the sampler's own
 * look-ups, ~1-1.5 µs of a short stream among 32 in flight (bench/HISTORY.md, glass9).
 */
export function knownVerdict(sampler: string, remote: SpanContext | undefined): SamplingResult | undefined {
  if (sampler === 'always_on') return SAMPLED;
  if (sampler !== 'parentbased_always_on') return undefined;
  if (remote === undefined) return SAMPLED;
  if (!isSpanContextValid(remote)) return undefined;
  return remote.traceFlags & TraceFlags.SAMPLED ? SAMPLED : NOT_SAMPLED;
}

async function otlpExporterOf(settings: TracingSettings, endpoint: string): Promise<SpanExporter> {
  // Only the protocol's exporter is loaded. Headers, timeout, compression and certificates come
  // from their OTEL_EXPORTER_OTLP_* variables, read by the exporter itself.
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url: endpoint });
  }
  // The library's protobuf exporter with a one-pass serializer of the same bytes (otlp-proto.ts).
  const { protobufSpanExporter } = await import('./otlp-proto.js');
  return protobufSpanExporter(endpoint);
}

/**
 * Every exporter OTEL_TRACES_EXPORTER names, as one: `otlp` (reporting its failures in the log)
 * and `console` (the SDK's ConsoleSpanExporter: each span printed on standard output, as the spec
 * defines `console`, for a look without a collector). A batch is done when each has taken it,
 * failed when the OTLP export failed.
 */
async function exportersOf(
  settings: TracingSettings,
  warn?: (message: string) => void,
): Promise<SpanExporter> {
  const all: SpanExporter[] = [];
  if (settings.endpoint !== undefined) {
    const otlp = await otlpExporterOf(settings, settings.endpoint);
    all.push(warn ? reporting(otlp, shown(settings.endpoint), warn) : otlp);
  }
  if (settings.console) all.push(new ConsoleSpanExporter());
  if (all.length === 1) return all[0]!;
  return {
    export(spans, done) {
      let left = all.length;
      let failed: ExportResult | undefined;
      for (const e of all)
        e.export(spans, (result) => {
          if (result.code !== ExportResultCode.SUCCESS) failed ??= result;
          if (--left === 0) done(failed ?? result);
        });
    },
    forceFlush: async () => {
      await Promise.all(all.map((e) => e.forceFlush?.()));
    },
    shutdown: async () => {
      await Promise.all(all.map((e) => e.shutdown()));
    },
  };
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
  // The SDK's sampler and exporter; the spans are written into a log of records as they end
  // (span-log.ts: the batch processor's rules, OTEL_BSP_* read as it reads them) and made into
  // lean.ts's spans at export, a batch at a time.
  const exporter = await exportersOf(settings, warn);
  const tracer = new LeanTracer(
    resource,
    { name: 'toolproof', version: undefined, schemaUrl: undefined },
    samplerOf(settings.sampler),
    NO_PROCESSOR,
    limitsOf(settings),
  );
  const log = new SpanLog(
    exporter,
    tracer,
    {},
    // otlp-proto.ts's exporter alone: a batch's records are written straight into protobuf.
    // The console exporter reads spans: with it, every exporter gets lean spans.
    settings.endpoint !== undefined && !settings.console && settings.protocol !== 'http/json',
  );
  return {
    startRequest(request, route) {
      // The front doors (/v1/...) skip the checks on their second character: ~6 ns a request
      // against ~11 for the checks (untraced() has no route beginning with /v).
      if (route !== undefined && route.charCodeAt(1) !== 0x76 && untraced(route)) return undefined;
      const remote = remoteParent(request.headers);
      const matched = route !== undefined && route !== '*' && route !== '/*';
      const name = matched ? spanName(request.method, route) : request.method;
      // The sampler decides once per trace (every sampler samplerOf makes samples a child of a
      // sampled span with its parent's trace state: lean.ts's sampledChildren), given the
      // client's span as the parent (a ParentContext, made only when one came).
      const traceId = remote ? remote.traceId : tracer.ids.generateTraceId();
      // The default sampler and always_on answer without being asked (knownVerdict).
      const known = knownVerdict(settings.sampler.name, remote);
      const result =
        known === undefined
          ? tracer.sampler.shouldSample(
              remote ? new ParentContext(remote) : ROOT_CONTEXT,
              traceId,
              name,
              SpanKind.SERVER,
              NO_ATTRIBUTES,
              NO_LINKS,
            )
          : known;
      const state = result.traceState ?? remote?.traceState;
      // Recorded but not sampled (no sampler of samplerOf says so) would go to no exporter either.
      if (result.decision !== SamplingDecision.RECORD_AND_SAMPLED)
        return unsampled(tracer, traceId, remote, request.headers, state);
      const t0 = performance.now();
      return new ServerSpan(
        log,
        traceId,
        tracer.ids.generateSpanId(),
        remote,
        state,
        name,
        tracer.clock(t0),
        t0,
        tracer.ids,
        settings.captureContent,
        matched ? route : undefined,
        result.attributes,
      );
    },
    flush: () => {
      flushSpanEnds();
      return log.forceFlush();
    },
    shutdown: () => {
      flushSpanEnds();
      return log.shutdown();
    },
  };
}

/**
 * Server spans that ended and whose records (theirs and their open attempt's) are not written
 * yet: ServerSpan.end keeps the span, its request, status and flags here, and they are written at
 * the end of the event loop's turn, many requests' in a row, the span log's code and tables warm
 * from one to the next (written one at a time, among 32 streams' other work, each found them
 * cold: glass11 measured a short stream's end 29.9 -> 2.2 + 20.3 µs, bench/HISTORY.md). Bounded:
 * past ENDS_MAX they are written at once; and before the log is flushed or shut down. A span's
 * times are those of its end (ServerSpan.now); its request is read as it was then (the log line
 * and the capture's end came before: app.ts).
 */
const ENDS_MAX = 256;
const endSpans: (ServerSpan | undefined)[] = new Array(ENDS_MAX).fill(undefined);
const endRequests: (FastifyRequest | undefined)[] = new Array(ENDS_MAX).fill(undefined);
const endNums = new Float64Array(ENDS_MAX * 2);
let ends = 0;
let endsScheduled = false;

function flushScheduledEnds(): void {
  endsScheduled = false;
  flushSpanEnds();
}

export function flushSpanEnds(): void {
  const n = ends;
  ends = 0;
  for (let i = 0; i < n; i++) {
    const span = endSpans[i]!;
    const request = endRequests[i]!;
    endSpans[i] = undefined;
    endRequests[i] = undefined;
    const flags = endNums[2 * i + 1]!;
    span.write(request, endNums[2 * i]!, (flags & 1) !== 0, (flags & 2) !== 0);
  }
}

/** The tracer's processor: spans are written into the span log (ServerSpan), never handed over. */
const NO_PROCESSOR = {
  onStart() {},
  onEnd() {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};
const NO_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const NO_LINKS: [] = [];

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
  traceState: TraceState | undefined,
): RequestSpan<ChatCall> {
  const state = traceState?.serialize();
  if (!remote)
    return new UnsampledSpan(traceId, `00-${traceId}-${tracer.ids.generateSpanId()}-00`, state, false);
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

  relay(
    _operation: string,
    _model: string,
    _origin: string,
    _request: object,
    headers: Record<string, string>,
  ): Record<string, string> {
    this.inject(headers);
    return headers;
  }

  attemptOpened(): void {}
  attemptThrew(): void {}
  attemptRejected(): void {}
  firstChunk(): void {}
  finishReason(): void {}
  stoppedEarly(): void {}
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

function setUsage(
  log: SpanLog,
  usage: Usage | undefined,
  keys: readonly [number, number, number] = GENAI_USAGE,
): void {
  if (!usage) return;
  if (typeof usage.prompt_tokens === 'number') log.set(keys[0], usage.prompt_tokens);
  if (typeof usage.completion_tokens === 'number') log.set(keys[1], usage.completion_tokens);
  const cached = (usage.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)
    ?.cached_tokens;
  if (typeof cached === 'number') log.set(keys[2], cached);
  // An attempt's reasoning tokens (the conventions: recommended when applicable, counted in
  // output_tokens too), when the upstream reports them as OpenAI's usage does.
  if (keys !== GENAI_USAGE) return;
  const reasoning = (usage.completion_tokens_details as { reasoning_tokens?: unknown } | null | undefined)
    ?.reasoning_tokens;
  if (typeof reasoning === 'number') log.set(K_GENAI_REASONINGTOKENS, reasoning);
}

function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : (err as Error | undefined)?.name || 'Error';
}

function errorMessage(err: unknown): string {
  const message = (err as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? redactForLog(message) : '';
}

/** A harness decision waiting for the server span's end: a policy effect, or a named event. */
interface PendingEvent {
  ms: number;
  /** A policy effect and the attempt it came from, or an event's name and attributes. */
  effect: PolicyEffect | undefined;
  attempt: number;
  name: string;
  attributes: Record<string, EventValue> | undefined;
}

/**
 * A sampled request's spans, as few objects and touches as the request allows: while it runs it
 * keeps its ids, its start times and the few numbers its spans' attributes need later (the
 * attempt's status and time to headers, the finish reasons); the harness's decisions are kept as
 * they came (the policy effect, the time). Each span is written into the span log (span-log.ts)
 * once, when it ends, from what the request and the attempt hold then: no span object, attribute
 * array or event object is made or kept during the request, and nothing is encoded here: the log's
 * export makes the spans and their bytes, a batch at a time.
 */
class ServerSpan implements RequestSpan<ChatCall> {
  private call: ChatCall | undefined;
  /** The client's headers and body until the conversation id is read from them (conversationId). */
  private clientHeaders: Record<string, string | string[] | undefined> | undefined;
  private clientBody: unknown;
  private conversation: string | undefined;
  /** The attempt span open now (at most one: attempts are sequential), its id and start. */
  private attemptSpanId: string | undefined;
  private attemptStartMs = 0;
  /** The open attempt's request as sent, its model and its upstream: written when it ends. */
  private attemptRequest: ChatCompletionRequest | undefined;
  private attemptModel = '';
  /** The open attempt's GenAI operation: `chat`, or a relay's (`text_completion`, `embeddings`). */
  private attemptOperation = 'chat';
  private attemptServer: Server | undefined;
  /** Its response's status and time to headers (-1: none yet). */
  private attemptStatus = -1;
  private attemptHeadersMs = -1;
  /** Its stream's first bytes, ms after it was sent (-1: none yet, or not a stream). */
  private attemptFirstChunkMs = -1;
  private reasons: string[] | readonly string[] | undefined;
  private payloads: readonly string[] | undefined;
  /**
   * The open attempt's report once it was read to its end, and that end's time: its record is
   * written when the next attempt starts or the server span ends (closeAttempt), just before
   * that one's, so the span log's code and tables are warm for the second record (written at the
   * read's end, the stream's last frames and the response's close came between, and on an agent
   * turn the other streams' work: the two records' writes each found them cold).
   */
  private readReport: TracedReport | undefined;
  private readEndMs = 0;
  private attempts = 0;
  private events: PendingEvent[] | undefined;
  private ended = false;
  private endedAt = 0;
  readonly captureContent: boolean;
  /** The server span's start, epoch milliseconds (performance.now() + base). */
  private readonly startMs: number;

  constructor(
    private readonly log: SpanLog,
    readonly traceId: string,
    private readonly spanId: string,
    /** The client's span (its traceparent), when one came. */
    private readonly remote: SpanContext | undefined,
    private readonly traceState: TraceState | undefined,
    private readonly name: string,
    /** performance.now() to epoch milliseconds, for every time of the trace (LeanTracer.clock). */
    private readonly base: number,
    t0: number,
    private readonly ids: IdGenerator,
    captureContent: boolean,
    /** The matched route pattern (`http.route`), when one matched. */
    private readonly route: string | undefined,
    /** What the sampler asked to set on the span (none of samplerOf's samplers does). */
    private readonly samplerAttributes: Attributes | undefined,
  ) {
    this.startMs = t0 + base;
    this.captureContent = captureContent;
  }

  private now(): number {
    // Once ended, its end's instant (the records may be written later: flushSpanEnds).
    return this.endedAt > 0 ? this.endedAt : performance.now() + this.base;
  }

  chat(call: ChatCall, headers: Record<string, string | string[] | undefined>, clientBody: unknown): void {
    this.call = call;
    this.clientHeaders = headers;
    this.clientBody = clientBody;
  }

  /**
   * The attempts' `gen_ai.conversation.id`: the client's X-Conversation-Id, else the session it
   * names as the inspector and affinity read it (Claude Code's session header, Codex's
   * `session_id` or `prompt_cache_key`, opencode's and Qwen Code's `x-session-affinity`...:
   * docs/affinity.md), without the label's prefix; none for a session only its opening messages
   * or a `metadata.user_id` key. Read once, at the first attempt's record.
   */
  private conversationId(): string {
    if (this.conversation !== undefined) return this.conversation;
    const headers = this.clientHeaders;
    let id = '';
    if (headers) {
      const named = this.call?.forwardHeaders['x-conversation-id'];
      if (named) id = named;
      else {
        // A `metadata.user_id` (u:) names a user, not a conversation: a trace backend is told no
        // user's id it was not asked for.
        const key = namedSessionKey(headers, this.clientBody);
        if (key !== undefined && !key.startsWith('u:')) id = key.slice(2);
      }
    }
    this.clientHeaders = undefined;
    this.clientBody = undefined;
    this.conversation = id === '' ? '' : cut256(id);
    return this.conversation;
  }

  /** The request's attributes (written as the server span ends). */
  private describeRequest(request: FastifyRequest): void {
    const log = this.log;
    const given = this.samplerAttributes;
    if (given) for (const key in given) log.setAttribute(key, given[key] as EventValue);
    log.set(K_HTTP_REQUEST_METHOD, request.method);
    const url = request.url;
    const query = url.indexOf('?');
    log.set(K_URL_PATH, cut256(query < 0 ? url : url.slice(0, query)));
    // Required on an HTTP server span (the HTTP conventions): as Fastify reads it from the
    // socket, `http` (toolproof listens on plain HTTP).
    log.set(K_URL_SCHEME, request.protocol);
    if (this.route !== undefined) log.set(K_HTTP_ROUTE, this.route);
    const agent = request.headers['user-agent'];
    if (typeof agent === 'string') log.set(K_USER_AGENT_ORIGINAL, cut256(agent));
    const call = this.call;
    if (!call) return;
    // The chat call's: what the client asked for, where it went. Under toolproof's names, none of
    // the GenAI conventions': they describe a client's call to a model (gen_ai.client.inference,
    // a CLIENT span: each attempt's), not a proxy's server span, and a GenAI backend lists any
    // span with gen_ai.operation.name, or a model name (Langfuse's fallback), as a generation of
    // its own: one with no tokens beside each attempt's.
    const r = call.original;
    log.set(K_TP_REQUEST_MODEL, typeof r.model === 'string' ? cut256(r.model) : '');
    log.set(K_TP_API, call.api);
    log.set(K_TP_MODEL, cut256(call.route.name));
    log.set(K_TP_UPSTREAM, call.route.client.label);
    // Set only when true (absent: not streamed), as the attempts' gen_ai.request.stream.
    if (r.stream === true) log.set(K_TP_STREAM, true);
    if (this.captureContent) log.set(K_TP_INPUTMESSAGES, inputMessages(r));
  }

  attempt(
    call: ChatCall,
    request: ChatCompletionRequest,
    headers: Record<string, string>,
  ): Record<string, string> {
    const upstreamModel = call.route.upstreamModel ?? request.model;
    return this.openAttempt(
      'chat',
      typeof upstreamModel === 'string' ? upstreamModel : '',
      call.route.client.origin,
      request,
      headers,
    );
  }

  relay(
    operation: 'text_completion' | 'embeddings',
    model: string,
    origin: string,
    request: object,
    headers: Record<string, string>,
  ): Record<string, string> {
    return this.openAttempt(operation, model, origin, request as ChatCompletionRequest, headers);
  }

  private openAttempt(
    operation: string,
    model: string,
    origin: string,
    request: ChatCompletionRequest,
    headers: Record<string, string>,
  ): Record<string, string> {
    this.closeAttempt('superseded'); // the last one's record, when read to its end (attemptRead)
    this.attempts++;
    this.attemptOperation = operation;
    this.attemptModel = cut256(model);
    this.attemptServer = serverOf(origin);
    // A child of a sampled span is sampled: the same verdict as asking the sampler (lean.ts's
    // sampledChildren). Its attributes are written as it ends (endAttempt), from what is kept here.
    const spanId = this.ids.generateSpanId();
    this.attemptSpanId = spanId;
    this.attemptStartMs = this.now();
    this.attemptRequest = request;
    this.attemptStatus = -1;
    this.attemptHeadersMs = -1;
    this.attemptFirstChunkMs = -1;
    this.reasons = undefined;
    this.payloads = undefined;
    return withTraceContext(headers, `00-${this.traceId}-${spanId}-01`, this.traceState?.serialize());
  }

  attemptOpened(res: UpstreamResponse): void {
    if (this.attemptSpanId === undefined || this.readReport !== undefined) return;
    this.attemptStatus = res.status;
    this.attemptHeadersMs = Math.round((this.now() - this.attemptStartMs) * 10) / 10;
    if (res.replica) this.attemptServer = serverOf(res.replica);
  }

  attemptThrew(err: unknown, aborted: boolean): void {
    if (this.readReport !== undefined) return;
    if (aborted) this.closeAttempt('client_aborted');
    else {
      // A body cut after its response opened: the generation failed, not merely never began.
      if (this.attemptStatus >= 200 && this.attemptStatus < 300) this.reasons ??= ERROR_REASONS;
      this.failAttempt(errorType(err), errorMessage(err));
    }
  }

  attemptRejected(status: number, body: unknown): void {
    if (this.readReport !== undefined) return;
    const message = (body as { error?: { message?: unknown } } | null | undefined)?.error?.message;
    this.failAttempt(
      String(status),
      typeof message === 'string' ? redactForLog(message) : `status ${status}`,
    );
  }

  firstChunk(): void {
    if (this.attemptSpanId === undefined || this.readReport !== undefined || this.attemptFirstChunkMs >= 0)
      return;
    this.attemptFirstChunkMs = this.now() - this.attemptStartMs;
  }

  finishReason(reason: string): void {
    if (this.attemptSpanId === undefined || this.readReport !== undefined) return;
    // The upstream's word, of any type and as often as it likes (on every chunk of a million):
    // a string, cut, and at most one per choice a stream can carry.
    const reasons = (this.reasons ??= []) as string[];
    if (reasons.length < MAX_FINISH_REASONS)
      reasons.push(typeof reason === 'string' ? cut256(reason) : String(reason).slice(0, 64));
  }

  stoppedEarly(cause: string): void {
    if (this.attemptSpanId !== undefined && this.readReport === undefined)
      this.reasons ??= EARLY_STOP_REASONS;
    this.event('toolproof.early_stop', { 'toolproof.cause': cause, 'toolproof.attempt': this.attempts });
  }

  attemptOutput(payloads: readonly string[]): void {
    if (this.readReport !== undefined) return;
    this.payloads = payloads;
  }

  attemptRead(report: TracedReport): void {
    if (this.attemptSpanId === undefined || this.readReport !== undefined) return;
    if (report.kind === 'failed')
      this.endAttempt(report, errorType(report.error), errorMessage(report.error), true, this.now());
    else if (report.kind === 'completion')
      // Now: the policies may rewrite the completion's fields the span says as the upstream sent them.
      this.endAttempt(report, undefined, undefined, false, this.now());
    else {
      // A stream's facts are the span's own (its finish reasons, the identity its chunks named,
      // its usage): written with the next record (closeAttempt), its end as of now.
      this.readReport = report;
      this.readEndMs = this.now();
    }
  }

  /** The open attempt's span written into the log: its request, its response, how it ended. */
  private endAttempt(
    report: TracedReport | undefined,
    error: string | undefined,
    message: string | undefined,
    failed: boolean,
    endMs: number,
  ): void {
    const spanId = this.attemptSpanId;
    if (spanId === undefined) return;
    this.attemptSpanId = undefined;
    this.readReport = undefined;
    const request = this.attemptRequest;
    this.attemptRequest = undefined;
    const payloads = this.payloads;
    this.payloads = undefined;
    const log = this.log;
    const model = this.attemptModel;
    const server = this.attemptServer;
    const operation = this.attemptOperation;
    log.open(
      SpanKind.CLIENT,
      1,
      this.traceId,
      spanId,
      this.spanId,
      false,
      this.traceState,
      server ? server.name(operation, model) : `${operation} ${model}`,
      this.attemptStartMs,
      Math.max(endMs, this.attemptStartMs),
    );
    try {
      if (request) {
        log.set(K_GENAI_OPERATION, operation);
        log.set(K_GENAI_PROVIDER, PROVIDER);
        log.set(K_GENAI_REQUESTMODEL, model);
        setRequestAttributes(log, request);
        if (request.stream === true) log.set(K_GENAI_REQUESTSTREAM, true);
        // Conditionally required on an inference span when available: the client's session.
        const conversation = this.conversationId();
        if (conversation) log.set(K_GENAI_CONVERSATIONID, conversation);
        log.set(K_TP_ATTEMPT, this.attempts);
        // The replica that answered, else the upstream it was sent to.
        server?.set(log);
        if (typeof request.tool_choice === 'string') log.set(K_TP_TOOL_CHOICE, request.tool_choice);
        if (this.captureContent && operation === 'chat') {
          log.set(K_GENAI_INPUTMESSAGES, inputMessages(request));
          const tools = toolDefinitions(request);
          if (tools !== undefined) log.set(K_GENAI_TOOLDEFINITIONS, tools);
        }
        if (this.attemptStatus >= 0) {
          log.set(K_HTTP_RESPONSE_STATUS_CODE, this.attemptStatus);
          // Time to the response headers: queue and prefill (an attribute: cheaper than an event).
          log.set(K_TP_UPSTREAM_HEADERS_MS, this.attemptHeadersMs);
        }
        // The GenAI conventions' time to first chunk: seconds, on a streaming request only.
        if (request.stream === true && this.attemptFirstChunkMs >= 0)
          log.set(K_GENAI_TIMETOFIRSTCHUNK, Math.round(this.attemptFirstChunkMs * 10) / 10_000);
      }
      if (report) this.describeResponse(report, payloads);
      else if (this.reasons) log.set(K_GENAI_FINISHREASONS, this.reasons as string[]);
      if (error !== undefined) {
        log.set(K_ERROR_TYPE, error);
        log.status(SpanStatusCode.ERROR, failed ? message : message!.replace('_', ' '));
      }
    } finally {
      log.close();
    }
  }

  /** What the attempt amounted to: tokens, the response's id and model, its finish reasons. */
  private describeResponse(report: TracedReport, payloads: readonly string[] | undefined): void {
    const log = this.log;
    setUsage(log, report.usage);
    const identity = this.call?.streamIdentity;
    let output: string | undefined;
    let model: string | undefined;
    if (report.kind === 'completion' && report.completion) {
      const c = report.completion;
      if (typeof c.model === 'string') model = c.model;
      if (typeof c.id === 'string') log.setUniqueAttribute(K_GENAI_RESPONSEID, c.id);
      const reasons = (c.choices ?? []).map((ch) => ch?.finish_reason).filter((f) => typeof f === 'string');
      if (reasons.length > 0) log.set(K_GENAI_FINISHREASONS, reasons as string[]);
      if (this.captureContent) output = completionMessages(c);
    } else {
      // A stream: its identity is the last one its chunks named (noteIdentity).
      if (identity && this.call?.original.stream === true && identity.id !== 'chatcmpl-toolproof') {
        model = identity.model;
        log.setUniqueAttribute(K_GENAI_RESPONSEID, identity.id);
      }
      const reasons = this.reasons ?? (report.kind === 'failed' ? ERROR_REASONS : undefined);
      if (reasons) log.set(K_GENAI_FINISHREASONS, reasons as string[]);
      if (this.captureContent && payloads) output = streamedMessages(payloads);
    }
    if (output !== undefined) log.set(K_GENAI_OUTPUTMESSAGES, output);
    if (typeof model === 'string') log.set(K_GENAI_RESPONSEMODEL, model);
  }

  effects(effects: readonly PolicyEffect[], attempt: number): void {
    if (this.ended) return;
    const ms = this.now();
    const events = (this.events ??= []);
    for (const effect of effects) events.push({ ms, effect, attempt, name: '', attributes: undefined });
  }

  event(name: string, attributes?: Record<string, EventValue>): void {
    if (this.ended) return;
    (this.events ??= []).push({ ms: this.now(), effect: undefined, attempt: 0, name, attributes });
  }

  /** A policy effect as the server span's event, written into its record. */
  private writeEffect(e: PolicyEffect, attempt: number, ms: number): void {
    const log = this.log;
    const r = describeEffect(e);
    if (!r) {
      openEffect(log, 'toolproof.effect', ms, e.policy, attempt);
      log.eventSet(K_TP_EFFECT, e.kind);
      log.eventClose();
      return;
    }
    switch (r.type) {
      case 'tally':
        openEffect(log, TALLY_EVENTS[r.tally] ?? `toolproof.${r.tally}`, ms, e.policy, attempt);
        log.eventSet(K_TP_KIND, r.key);
        log.eventSet(K_TP_COUNT, r.count);
        break;
      case 'forced':
        openEffect(log, 'toolproof.forced', ms, e.policy, attempt);
        log.eventSet(K_TP_TOOL_CHOICE, r.toolChoice);
        break;
      case 'final-answer':
        openEffect(log, 'toolproof.final_answer', ms, e.policy, attempt);
        break;
      case 'forced-but-prose':
        openEffect(log, 'toolproof.forced_but_prose', ms, e.policy, attempt);
        break;
      case 'leak':
        openEffect(log, 'toolproof.leak', ms, e.policy, attempt);
        log.eventSet(K_TP_LEAK_FORMAT, r.leak.format);
        log.eventSet(K_TP_LEAK_SOURCE, r.leak.source);
        log.eventSet(K_TP_LEAK_OUTCOME, r.leak.outcome);
        if (r.leak.backendHint) log.eventSet(K_TP_LEAK_BACKEND_HINT, r.leak.backendHint);
        if (r.leak.reason) log.eventSet(K_TP_LEAK_REASON, r.leak.reason);
        break;
      case 'validation-failed':
        openEffect(log, 'toolproof.validation_failed', ms, e.policy, attempt);
        log.eventSet(K_TP_TOOL, cut256(r.tool));
        log.eventSet(K_TP_UNDECLARED, r.undeclared);
        break;
      case 'schema-unenforced':
        openEffect(log, 'toolproof.schema_unenforced', ms, e.policy, attempt);
        log.eventSet(K_TP_TOOL, cut256(r.tool));
        log.eventSet(K_TP_CAUSE, r.cause);
        log.eventSet(K_TP_REASONS, r.reasons);
        break;
      case 'retry':
        openEffect(log, 'toolproof.retry', ms, e.policy, attempt);
        log.eventSet(K_TP_RETRY_REASON, r.reason);
        break;
      case 'degraded':
        // On every turn that carries it: a remembered refusal's later turns have no other event.
        openEffect(log, 'toolproof.degraded', ms, e.policy, attempt);
        log.eventSet(K_TP_KIND, r.kind);
        log.eventSet(K_TP_COUNT, r.count);
        break;
      default:
        return;
    }
    log.eventClose();
  }

  inject(headers: Record<string, string>): void {
    delete headers.traceparent;
    delete headers.tracestate;
    headers.traceparent = `00-${this.traceId}-${this.spanId}-01`;
    if (this.traceState) headers.tracestate = this.traceState.serialize();
  }

  end(request: FastifyRequest, status: number, ended: boolean, headersSent = true): void {
    if (this.ended) return;
    this.ended = true;
    this.endedAt = this.now();
    if (ends >= ENDS_MAX) flushSpanEnds();
    endSpans[ends] = this;
    endRequests[ends] = request;
    endNums[2 * ends] = status;
    endNums[2 * ends + 1] = (ended ? 1 : 0) | (headersSent ? 2 : 0);
    ends++;
    if (!endsScheduled) {
      endsScheduled = true;
      setImmediate(flushScheduledEnds);
    }
  }

  /** Its records and its open attempt's written into the span log (flushSpanEnds, after end). */
  write(request: FastifyRequest, status: number, ended: boolean, headersSent: boolean): void {
    // Called from setImmediate or a response's 'close' listener: a throw here would take the
    // process down.
    try {
      // An attempt still open ends first (its record before the server span's).
      this.closeAttempt(ended ? 'unfinished' : 'client_aborted');
    } catch {
      // the server span still ends
    }
    const log = this.log;
    const remote = this.remote;
    log.open(
      SpanKind.SERVER,
      1,
      this.traceId,
      this.spanId,
      remote?.spanId,
      true,
      this.traceState,
      this.name,
      this.startMs,
      Math.max(this.now(), this.startMs),
    );
    try {
      this.describeEnd(request, status, ended, headersSent);
    } catch {
      // the span still ends, with what it had
    } finally {
      log.close();
    }
  }

  private describeEnd(request: FastifyRequest, status: number, ended: boolean, headersSent: boolean): void {
    const log = this.log;
    const call = this.call;
    this.describeRequest(request);
    log.setUniqueAttribute(K_TP_REQUEST_ID, String(request.id));
    if (ended || headersSent) log.set(K_HTTP_RESPONSE_STATUS_CODE, status);
    if (call) {
      const t = call.trace;
      setUsage(log, callUsage(call), TP_USAGE);
      log.set(K_TP_ATTEMPTS, t.attempts);
      // What did not happen is not written, nor what another attribute or an event already says
      // (forced: toolproof.tool_choice, set only then, and the toolproof.forced event; the final
      // answer: toolproof.final_kind and its event; the response's model: the attempt spans'):
      // every attribute is paid for in each export.
      if (t.toolChoiceSent) log.set(K_TP_TOOL_CHOICE, t.toolChoiceSent);
      if (t.fallback) log.set(K_TP_FALLBACK, true);
      if (t.retries.length > 0) log.set(K_TP_RETRIES, t.retries.length);
      if (t.leaks.length > 0) log.set(K_TP_LEAKS, t.leaks.length);
      if (t.finalKind) log.set(K_TP_FINAL_KIND, t.finalKind);
      if (t.droppedTools) log.set(K_TP_DROPPED_TOOLS, t.droppedTools);
      if (call.discardedTokens > 0) log.set(K_TP_DISCARDED_TOKENS, call.discardedTokens);
    } else setUsage(log, request.tp?.usage, TP_USAGE); // a relayed completion or embedding: its client span's gen_ai.usage.*
    // Its tokens unknown (the log line's logRequest decided it): said, not left to read as 0.
    if (request.tp?.usageUnreported) log.set(K_TP_USAGE_UNREPORTED, true);
    const events = this.events;
    if (events) {
      this.events = undefined;
      for (const e of events) {
        if (e.effect) this.writeEffect(e.effect, e.attempt, e.ms);
        else log.event(e.name, e.ms, e.attributes);
      }
    }
    const err: ToolproofError | undefined = request.tpError ?? call?.streamError;
    if (!ended) {
      // The client left first (nginx's 499): no status went out, or not all of the response.
      log.set(K_ERROR_TYPE, 'client_aborted');
      log.event('toolproof.client_aborted', this.now(), { 'toolproof.headers_sent': headersSent });
      log.status(SpanStatusCode.ERROR, 'the client closed the connection first');
    } else if (err) {
      log.set(K_ERROR_TYPE, err.code);
      // A server span's 4xx is the client's fault, not an error of the span (HTTP conventions);
      // an error written into a stream after its 200 is one.
      if (status >= 500 || call?.streamError) log.status(SpanStatusCode.ERROR, redactForLog(err.message));
    } else if (status >= 500) {
      log.set(K_ERROR_TYPE, String(status));
      log.status(SpanStatusCode.ERROR, undefined);
    }
  }

  /** Ends the open attempt span; `why`, when it did not end by itself (client gone, ...). */
  private closeAttempt(why?: string): void {
    if (this.attemptSpanId === undefined) return;
    const read = this.readReport;
    // Read to its end (attemptRead): written as it ended then.
    if (read !== undefined) this.endAttempt(read, undefined, undefined, false, this.readEndMs);
    else {
      // Cancelled while the upstream wrote: the reasons it gave, else that the client closed it.
      if (why === 'client_aborted') this.reasons ??= CLIENT_CLOSED_REASONS;
      this.endAttempt(undefined, why, why, false, this.now());
    }
  }

  private failAttempt(type: string, message: string): void {
    if (this.attemptSpanId === undefined) return;
    this.endAttempt(undefined, type, message, true, this.now());
  }
}

/** An effect's event opened, with its policy and attempt (ServerSpan.writeEffect). */
function openEffect(log: SpanLog, name: string, ms: number, policy: string, attempt: number): void {
  log.eventOpen(name, ms);
  log.eventSet(K_TP_POLICY, policy);
  log.eventSet(K_TP_ATTEMPT, attempt);
}

/** An upstream origin's server.address and server.port, and its attempt spans' names. */
class Server {
  private readonly names = new Map<string, string>();
  constructor(
    private readonly address: string | undefined,
    private readonly port: number | undefined,
  ) {}

  set(log: SpanLog): void {
    if (this.address === undefined) return;
    log.set(K_SERVER_ADDRESS, this.address);
    log.set(K_SERVER_PORT, this.port!);
  }

  /**
   * `<operation> <model>` (`chat m`, `embeddings m`), made once per pair (a closed set: the
   * routes' models times three operations, bounded anyway).
   */
  name(operation: string, model: string): string {
    const key = operation === 'chat' ? model : `${operation}\0${model}`;
    let name = this.names.get(key);
    if (name === undefined) {
      name = `${operation} ${model}`;
      if (this.names.size < 256) this.names.set(key, name);
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
