/**
 * The one metrics registry. Only server/ touches it; parsers and policies report what they did
 * as values (LeakRecord, PolicyEffect) and server/ counts them here.
 * Labels come from small closed sets or from configuration (model, upstream), never raw user text;
 * `tool` is bounded by the tools a request declares.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { hotCounter, hotHistogram } from './hot-series.js';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  /** What /metrics shows: this process's registry, or the whole worker group's (server/cluster.ts). */
  let exposition: () => Promise<string> = () => registry.metrics();
  let fallbackSource: (() => Array<[string, string]>) | undefined;
  let openStreamsSource: (() => number) | undefined;
  /** Pairs ever reported active: they drop back to 0 (not vanish) so the alert resolves. */
  const fallbackSeen = new Set<string>();

  const m = {
    registry,
    requests: new Counter({
      name: 'toolproof_requests_total',
      help: 'Client requests handled, by model, route, HTTP status and front door (api: chat, responses, messages, passthrough, ops).',
      labelNames: ['model', 'route', 'status', 'api'] as const,
      registers,
    }),
    requestDuration: new Histogram({
      name: 'toolproof_request_duration_seconds',
      help: 'Client request latency from arrival to the last byte sent, by model, route and front door (api).',
      labelNames: ['model', 'route', 'stream', 'api'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: 'toolproof_upstream_duration_seconds',
      help: 'Upstream latency to response headers, by model, route and upstream.',
      labelNames: ['model', 'route', 'upstream'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamErrors: new Counter({
      name: 'toolproof_upstream_errors_total',
      help: 'Upstream failures by kind: unreachable, timeout, status_4xx, status_5xx, mid_stream, bad_response.',
      labelNames: ['model', 'upstream', 'kind'] as const,
      registers,
    }),
    clientConstraints: new Counter({
      name: 'toolproof_client_constraints_total',
      help: 'What the client asked for, enforced on what it received: forbidden-call (tool_choice none), dropped-parallel-call (parallel_tool_calls false).',
      labelNames: ['model', 'kind'] as const,
      registers,
    }),
    finalAnswerProblems: new Counter({
      name: 'toolproof_final_answer_problems_total',
      help: 'final_answer calls without an answer string: invalid (re-asked), raw (retries spent: returned as JSON text).',
      labelNames: ['model', 'kind'] as const,
      registers,
    }),
    internalErrors: new Counter({
      name: 'toolproof_internal_errors_total',
      help: "toolproof's own failures while handling a request (bugs, not upstream faults); each is logged with its stack.",
      labelNames: ['model'] as const,
      registers,
    }),
    leaks: new Counter({
      name: 'toolproof_leaks_total',
      help: 'Tool calls found written as text, by format, where (content, reasoning, error), outcome (recovered, unrecovered, rejected, suppressed) and front door (api: chat, responses, messages).',
      labelNames: ['model', 'format', 'source', 'outcome', 'api'] as const,
      registers,
    }),
    responses: new Counter({
      name: 'toolproof_responses_total',
      help: 'Responses to requests with tools declared, by what reached the client (tool_calls, content or both) and front door (api: chat, responses, messages).',
      labelNames: ['model', 'kind', 'api'] as const,
      registers,
    }),
    argumentValidationFailures: new Counter({
      name: 'toolproof_argument_validation_failures_total',
      help: 'Tool calls whose arguments failed the declared JSON schema (or named an undeclared tool).',
      labelNames: ['model', 'tool'] as const,
      registers,
    }),
    forced: new Counter({
      name: 'toolproof_forced_total',
      help: 'Requests sent upstream with the synthetic final_answer tool (forced tool use).',
      labelNames: ['model', 'tool_choice'] as const,
      registers,
    }),
    finalAnswers: new Counter({
      name: 'toolproof_final_answers_total',
      help: 'final_answer calls turned back into an ordinary assistant message.',
      labelNames: ['model'] as const,
      registers,
    }),
    forcedButProse: new Counter({
      name: 'toolproof_forced_but_prose_total',
      help: 'Forced requests that still came back as plain prose (the backend ignored tool_choice "required").',
      labelNames: ['model'] as const,
      registers,
    }),
    toolChoiceFallbacks: new Counter({
      name: 'toolproof_tool_choice_fallbacks_total',
      help: 'Requests retried with tool_choice "auto" after the upstream rejected "required".',
      labelNames: ['upstream', 'model'] as const,
      registers,
    }),
    toolChoiceFallbackActive: new Gauge({
      name: 'toolproof_tool_choice_fallback_active',
      help: '1 while toolproof remembers that this upstream rejects tool_choice "required" and sends "auto".',
      labelNames: ['upstream', 'model'] as const,
      registers,
      // With several workers each has its own memory: the group shows 1 when any worker remembers.
      aggregator: 'max',
      // Recomputed from the memory at every collection (also when the cluster primary gathers
      // the workers' values), so an expired memory reads 0 without waiting for a request.
      collect() {
        if (!fallbackSource) return;
        const active = new Set<string>();
        this.reset();
        for (const [upstream, model] of fallbackSource()) {
          const key = `${upstream}\u0000${model}`;
          active.add(key);
          fallbackSeen.add(key);
          this.labels(upstream, model).set(1);
        }
        for (const key of fallbackSeen) {
          if (active.has(key)) continue;
          const [upstream, model] = key.split('\u0000') as [string, string];
          this.labels(upstream, model).set(0);
        }
      },
    }),
    openStreams: new Gauge({
      name: 'toolproof_open_streams',
      help: 'Client SSE streams open right now, on every front door and the pass-through; a count that does not come back to 0 when traffic stops is a leak.',
      registers,
      aggregator: 'sum',
      collect() {
        if (openStreamsSource) this.set(openStreamsSource());
      },
    }),
    historyRepairs: new Counter({
      name: 'toolproof_history_repairs_total',
      help: 'Repairs made to conversation history before it went upstream, by kind.',
      labelNames: ['model', 'kind'] as const,
      registers,
    }),
    retries: new Counter({
      name: 'toolproof_retries_total',
      help: 'Corrective retries after an invalid tool call, by reason and outcome.',
      labelNames: ['model', 'reason', 'outcome'] as const,
      registers,
    }),
    droppedTools: new Counter({
      name: 'toolproof_dropped_tools_total',
      help: 'Hosted tools (web_search, file_search, Anthropic server tools...) left out of the upstream request, by front door and tool type family.',
      labelNames: ['model', 'api', 'tool'] as const,
      registers,
    }),
    normalizations: new Counter({
      name: 'toolproof_tool_call_normalizations_total',
      help: 'Structured tool calls from the backend that needed fixing: duplicate index, duplicate id, truncated arguments.',
      labelNames: ['model', 'kind'] as const,
      registers,
    }),
  };
  return {
    ...m,
    contentType: registry.contentType,
    /** The Prometheus text for /metrics. */
    render: (): Promise<string> => exposition(),
    /** Replaces what render() returns (a cluster worker asks the primary for the group's metrics). */
    setExposition(source: () => Promise<string>): void {
      exposition = source;
    },
    /** Where toolproof_tool_choice_fallback_active reads the remembered [upstream, model] pairs. */
    followFallbackMemory(source: () => Array<[string, string]>): void {
      fallbackSource = source;
    },
    /** Where toolproof_open_streams reads the number of client streams open. */
    followOpenStreams(source: () => number): void {
      openStreamsSource = source;
    },
    /**
     * The series touched by every request, counted in plain objects and handed to prom-client
     * when a scrape reads them (see hot-series.ts): prom-client validates and hashes the labels
     * on every inc() and observe(), even on a child from labels().
     */
    hot: {
      requests: hotCounter(m.requests),
      requestDuration: hotHistogram(m.requestDuration),
      upstreamDuration: hotHistogram(m.upstreamDuration),
      // Every request with tools: the response kind, and (forced) the forcing and its final answer.
      responses: hotCounter(m.responses),
      forced: hotCounter(m.forced),
      finalAnswers: hotCounter(m.finalAnswers),
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
