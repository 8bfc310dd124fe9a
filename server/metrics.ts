/**
 * The one metrics registry. Only server/ touches it; parsers and policies report what they did
 * as values (LeakRecord, PolicyEffect) and server/ counts them here.
 * Labels come from small closed sets or from configuration (model, upstream), never raw user text;
 * `tool` is bounded by the tools a request declares.
 */
import {
  type Aggregator,
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type Metric,
  Registry,
} from 'prom-client';
import { hotCounter, hotHistogram } from './hot-series.js';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** One metric as declared: its prom-client type, name, help text and label names. */
interface MetricSpec {
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly name: string;
  readonly help: string;
  /** The label names in order, separated by one space ('' for none). */
  readonly labels: string;
  /** Histograms only. */
  readonly buckets?: readonly number[];
  /** How the cluster primary merges the workers' values (prom-client's default: sum). */
  readonly aggregator?: Aggregator;
}

/**
 * Every metric toolproof exposes, in the order /metrics lists them. docs/metrics.md, the deploy/
 * dashboards and recording rules name these; tests/deploy/dashboard-metrics.test.ts checks them.
 */
const METRICS = {
  requests: {
    type: 'counter',
    name: 'toolproof_requests_total',
    help: 'Client requests handled, by model, route, HTTP status and front door (api: chat, responses, messages, passthrough, models, inspect, ops).',
    labels: 'model route status api',
  },
  requestDuration: {
    type: 'histogram',
    name: 'toolproof_request_duration_seconds',
    help: 'Client request latency from arrival to the last byte sent, by model, route and front door (api).',
    labels: 'model route stream api',
    buckets: LATENCY_BUCKETS,
  },
  upstreamDuration: {
    type: 'histogram',
    name: 'toolproof_upstream_duration_seconds',
    help: 'Upstream latency to response headers, by model, route and upstream.',
    labels: 'model route upstream',
    buckets: LATENCY_BUCKETS,
  },
  upstreamErrors: {
    type: 'counter',
    name: 'toolproof_upstream_errors_total',
    help: 'Upstream failures by kind: unreachable, timeout, status_4xx, status_5xx, mid_stream, cut_off, bad_response.',
    labels: 'model upstream kind',
  },
  clientConstraints: {
    type: 'counter',
    name: 'toolproof_client_constraints_total',
    help: 'What the client asked for, enforced on what it received: forbidden-call (tool_choice none), dropped-parallel-call (parallel_tool_calls false).',
    labels: 'model kind',
  },
  finalAnswerProblems: {
    type: 'counter',
    name: 'toolproof_final_answer_problems_total',
    help: 'final_answer calls without an answer string: invalid (re-asked), raw (retries spent: returned as JSON text).',
    labels: 'model kind',
  },
  internalErrors: {
    type: 'counter',
    name: 'toolproof_internal_errors_total',
    help: "toolproof's own failures while handling a request (bugs, not upstream faults); each is logged with its stack.",
    labels: 'model',
  },
  clientAborts: {
    type: 'counter',
    name: 'toolproof_client_aborts_total',
    help: 'Requests whose client left before the response was complete, by front door (api) and stage (before_response: no headers sent yet; mid_response: during the body or stream). The upstream request is cancelled; not an error.',
    labels: 'api stage',
  },
  leaks: {
    type: 'counter',
    name: 'toolproof_leaks_total',
    help: 'Tool calls found written as text, by format, where (content, reasoning, error), outcome (recovered, unrecovered, rejected, suppressed) and front door (api: chat, responses, messages).',
    labels: 'model format source outcome api',
  },
  leakReasks: {
    type: 'counter',
    name: 'toolproof_leak_reasks_total',
    help: "Corrective retries of a turn whose tool-call text toolproof could not read (re-asked instead of read: a whole generation more), by the leak's format and cause (unreadable, undeclared-tool, not-an-object, draft, too-long, rejected).",
    labels: 'model format cause',
  },
  responses: {
    type: 'counter',
    name: 'toolproof_responses_total',
    help: 'Responses to requests with tools declared, by what reached the client (tool_calls, content or both) and front door (api: chat, responses, messages).',
    labels: 'model kind api',
  },
  argumentValidationFailures: {
    type: 'counter',
    name: 'toolproof_argument_validation_failures_total',
    help: 'Tool calls whose arguments failed the declared JSON schema (or named an undeclared tool).',
    labels: 'model tool',
  },
  schemasUnenforced: {
    type: 'counter',
    name: 'toolproof_schemas_unenforced_total',
    help: 'Tool calls whose declared schema was not fully checked, by cause: budget (compile budget spent), cost (schema too costly to compile), schema (could not be compiled or applied), pattern (a pattern RE2 cannot run).',
    labels: 'model cause',
  },
  forced: {
    type: 'counter',
    name: 'toolproof_forced_total',
    help: 'Requests sent upstream with the synthetic final_answer tool (forced tool use).',
    labels: 'model tool_choice',
  },
  finalAnswers: {
    type: 'counter',
    name: 'toolproof_final_answers_total',
    help: 'final_answer calls turned back into an ordinary assistant message.',
    labels: 'model',
  },
  forcedButProse: {
    type: 'counter',
    name: 'toolproof_forced_but_prose_total',
    help: 'Forced requests that still came back as plain prose (the backend ignored tool_choice "required").',
    labels: 'model',
  },
  toolChoiceFallbacks: {
    type: 'counter',
    name: 'toolproof_tool_choice_fallbacks_total',
    help: 'Requests retried with tool_choice "auto" after the upstream rejected "required".',
    labels: 'upstream model',
  },
  upstreamRefusals: {
    type: 'counter',
    name: 'toolproof_upstream_refusals_total',
    help: 'Requests sent again rewritten because the upstream refused something its model cannot take, by decision: vision-refused (images, sent again as notes), audio-refused (audio, sent again as notes), video-refused (video, sent again as notes), part-type-refused (content parts of a type its parser does not know, sent again as text), schema-keywords-refused (guided-decoding schema keywords, left out), parallel-calls-refused (a template taking one tool call per assistant message: each call sent in its own message), template-rules-refused (a Mistral template raising on 9-character ids or alternating roles: ids mapped, a bridge line after tool results, same-role turns joined), choices-refused (several choices, n, refused: each asked by a request of its own), logprobs-refused (logprobs on a streamed request with tools: sent again without them), tool-names-refused (tool names a Mistral tokenizer refuses: sent again under aliases), image-fetch-refused (image URLs it could not fetch, sent again as notes), image-decode-refused (inline images it could not decode, sent again as notes), audio-decode-refused (audio clips it could not decode, sent again as notes), image-limit-refused (more images than it takes a prompt: the oldest sent again as notes), tool-images-refused (a template rendering no image of a tool message: each such image sent again in a user message after the results), output-budget-refused (an output budget the window cannot hold beside a prompt that fits: sent again without max_tokens), context-window-learnt (a prompt over a window the upstream did not publish: its tool results cut to the window its refusal named), prompt-over-window (a prompt over the known window: its older tool results cut). The refused attempt is in upstream_errors too.',
    labels: 'upstream model decision',
  },
  toolChoiceFallbackActive: {
    type: 'gauge',
    name: 'toolproof_tool_choice_fallback_active',
    help: '1 while toolproof remembers that this upstream rejects tool_choice "required" and sends "auto".',
    labels: 'upstream model',
    // With several workers each has its own memory: the group shows 1 when any worker remembers.
    aggregator: 'max',
  },
  openStreams: {
    type: 'gauge',
    name: 'toolproof_open_streams',
    help: 'Client SSE streams open right now, on every front door and the pass-through; a count that does not come back to 0 when traffic stops is a leak.',
    labels: '',
    aggregator: 'sum',
  },
  responsesStoreBytes: {
    type: 'gauge',
    name: 'toolproof_responses_store_bytes',
    help: 'Bytes of Responses output items and conversation turns kept so that a later item_reference or previous_response_id resolves (TOOLPROOF_RESPONSES_STORE_MB), counted as the store counts them; a store full all the time evicts them before their next turn comes.',
    labels: '',
    aggregator: 'sum',
  },
  responsesItemReferences: {
    type: 'counter',
    name: 'toolproof_responses_item_references_total',
    help: 'item_reference items in Responses requests, by outcome: resolved (an item this process returned to that key) or missing (evicted, from another key, worker or replica: a 400).',
    labels: 'outcome',
  },
  responsesPrevious: {
    type: 'counter',
    name: 'toolproof_responses_previous_total',
    help: 'Responses requests naming previous_response_id or conversation, by outcome: continued (its conversation was held by this process for that key) or missing (evicted, from another key, worker or replica, or before a restart: a 400 telling the client to send the whole conversation).',
    labels: 'outcome',
  },
  responsesRelayed: {
    type: 'counter',
    name: 'toolproof_responses_relayed_total',
    help: 'Responses requests (previous_response_id, conversation, item_reference, GET/DELETE of a response or conversation) whose state another worker of TOOLPROOF_WORKERS holds, carried to it, by outcome: relayed (that worker answered; the request is counted there), unreachable (it had just gone: answered here as not held) or broken (it went away while answering); and the questions for the items that the item_references of a request name on a worker other than the one serving it: asked (answered) or unanswered (not within 2 s, or gone: those references become a note).',
    labels: 'outcome',
  },
  degradedContent: {
    type: 'counter',
    name: 'toolproof_degraded_content_total',
    help: 'Content a model cannot take, degraded before it went upstream, by kind: document-text (a document as its extracted text), document-cut (a document whose text was cut to a quarter of a window it would not fit), document-note (a document it could not read, as a note), image-note (an image for a model that cannot see, as a note), image-overflow-note (an image of the older messages of a prompt over its window, as a note), image-unfetched (an image whose URL the upstream could not fetch, as a note), image-undecodable (an inline image the upstream could not decode, WebP on llama-server, HEIC or SVG on vLLM, as a note), image-limit-note (an older image past the images a prompt the upstream takes, as a note), tool-image-moved (an image of a tool result moved to a user message after the results, for a template that renders none in a tool message), audio-note (audio for a model that cannot take it, as a note), audio-undecodable (an audio clip the upstream could not decode, an Ogg voice note on llama-server, as a note), tool-result-cut (a tool result cut to maxToolResultTokens). Counted per request that carries it (a history re-sends it every turn).',
    labels: 'model api kind',
  },
  historyRepairs: {
    type: 'counter',
    name: 'toolproof_history_repairs_total',
    help: 'Repairs made to conversation history before it went upstream, by kind.',
    labels: 'model kind',
  },
  retries: {
    type: 'counter',
    name: 'toolproof_retries_total',
    help: 'Corrective retries after an invalid tool call, by reason and outcome.',
    labels: 'model reason outcome',
  },
  schemaAnswers: {
    type: 'counter',
    name: 'toolproof_schema_answers_total',
    help: 'Answers the client asked in a JSON schema (or as a JSON object), by model and outcome: valid, invalid (delivered once retries were spent), not-json, unchecked (a schema toolproof could not compile).',
    labels: 'model outcome',
  },
  droppedTools: {
    type: 'counter',
    name: 'toolproof_dropped_tools_total',
    help: 'Hosted tools (web_search, file_search, Anthropic server tools...) left out of the upstream request, by front door and tool type family.',
    labels: 'model api tool',
  },
  promptTokens: {
    type: 'counter',
    name: 'toolproof_prompt_tokens_total',
    help: 'Prompt tokens of chat requests whose upstream reported how many it served from cache (all attempts), by model: the denominator of the cached ratio.',
    labels: 'model',
  },
  promptCachedTokens: {
    type: 'counter',
    name: 'toolproof_prompt_cached_tokens_total',
    help: "Of those, prompt tokens the upstream served from its prefix cache (cached_tokens or llama-server's cache_n).",
    labels: 'model',
  },
  discardedCompletionTokens: {
    type: 'counter',
    name: 'toolproof_discarded_completion_tokens_total',
    help: 'Completion tokens the upstream generated in attempts toolproof discarded (a corrective retry followed).',
    labels: 'model',
  },
  earlyStops: {
    type: 'counter',
    name: 'toolproof_upstream_early_stops_total',
    help: 'Streamed upstream attempts toolproof cut off because it had decided to discard their output (retry-certain: call text past the held-text cap).',
    labels: 'model reason',
  },
  upstreamReplays: {
    type: 'counter',
    name: 'toolproof_upstream_replays_total',
    help: 'Upstream requests sent again on a fresh connection because the pooled connection they met had been closed by the upstream before answering (keep-alive race; the request never reached its application).',
    labels: 'upstream',
  },
  admissionQueueDepth: {
    type: 'gauge',
    name: 'toolproof_admission_queue_depth',
    help: "Requests waiting in toolproof's admission queue for a slot of the upstream's replicas, by priority class.",
    labels: 'upstream class',
    aggregator: 'sum',
  },
  admissionQueued: {
    type: 'histogram',
    name: 'toolproof_admission_queued_seconds',
    help: 'Time a request waited for an upstream slot before it was sent (0 when one was free), by priority class.',
    labels: 'upstream class',
    buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  },
  admissionAdmitted: {
    type: 'counter',
    name: 'toolproof_admission_admitted_total',
    help: 'Requests admitted to an upstream replica by admission control, by priority class.',
    labels: 'upstream class',
  },
  admissionShed: {
    type: 'counter',
    name: 'toolproof_admission_shed_total',
    help: 'Requests refused by admission control, by priority class and reason: full (queue bound: 429), timeout (queue timeout: 503).',
    labels: 'upstream class reason',
  },
  routeFallbacks: {
    type: 'counter',
    name: 'toolproof_route_fallbacks_total',
    help: "Requests sent to another configured model than the one asked for, by reason: connection (the upstream refused), status_502/503/529, queue_full (admission), long_context (the prompt is beyond the model's window). Always before the first byte reached the client.",
    labels: 'from to reason',
  },
  configReloads: {
    type: 'counter',
    name: 'toolproof_config_reloads_total',
    help: 'Configuration reloads (SIGHUP or a change of the YAML file), by result: ok (swapped in), error (invalid: the running configuration kept, an error line names the bad key).',
    labels: 'result',
  },
  configReloadOk: {
    type: 'gauge',
    name: 'toolproof_config_reload_ok',
    help: '1 when the last configuration reload succeeded (or none was asked for), 0 while the file on disk is invalid and the running configuration is an older one.',
    labels: '',
    // With several workers: 0 when any worker kept an older configuration.
    aggregator: 'min',
  },
  keyRequests: {
    type: 'counter',
    name: 'toolproof_key_requests_total',
    help: 'Client requests by the name of the API key they presented (default: a key of the flat TOOLPROOF_API_KEYS list), by HTTP status; only when keys are configured.',
    labels: 'key status',
  },
  keyTokens: {
    type: 'counter',
    name: 'toolproof_key_tokens_total',
    help: 'Tokens the upstream reported per API key name and model, by kind: prompt, cached (of the prompt, served from the prefix cache), completion.',
    labels: 'key model kind',
  },
  usageUnreported: {
    type: 'counter',
    name: 'toolproof_usage_unreported_total',
    help: "Requests the upstream answered without reporting their usage, by model and front door (api): their tokens are unknown and in no token counter (vLLM's stream when nobody asked for stream_options.include_usage: a chat stream passed through as sent, a completions stream).",
    labels: 'model api',
  },
  keyRefusals: {
    type: 'counter',
    name: 'toolproof_key_refusals_total',
    help: "Requests refused for their API key, by reason: requests, tokens (per-minute limits: 429), concurrency (cap: 429, after the key's queue wait), model (allow-list: 403).",
    labels: 'key reason',
  },
  keyAdmissionQueued: {
    type: 'histogram',
    name: 'toolproof_key_admission_queued_seconds',
    help: "Time a request waited in toolproof's admission queue for an upstream slot before it was sent (0 when one was free), by the name of its API key; only when keys are configured. Fair shares within a class keep one key's burst from raising another key's wait.",
    labels: 'key',
    buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  },
  keyAdmissionInflight: {
    type: 'gauge',
    name: 'toolproof_key_admission_inflight',
    help: "Requests holding a slot of an upstream replica (admission), by the name of their API key: the share that fair shares balance between keys (summed over workers, whose slots are the group's). Only with keys and an admission concurrency.",
    labels: 'key',
    aggregator: 'sum',
  },
  keyQueued: {
    type: 'histogram',
    name: 'toolproof_key_queued_seconds',
    help: "Time a request waited in its API key's queue for a slot of the key's concurrency (0 when one was free), served or refused after it, by the key's name; only for keys with a concurrency. The upstream's admission queue comes after it (toolproof_key_admission_queued_seconds).",
    labels: 'key',
    buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  },
  keyQueueDepth: {
    type: 'gauge',
    name: 'toolproof_key_queue_depth',
    help: "Requests waiting for a slot of their API key's concurrency (the key's queue, queueTimeoutMs at most).",
    labels: 'key',
    aggregator: 'sum',
  },
  multiTurnRequests: {
    type: 'counter',
    name: 'toolproof_multi_turn_requests_total',
    help: 'Chat requests whose history already holds an assistant turn (a conversation past its first turn).',
    labels: 'model',
  },
  normalizations: {
    type: 'counter',
    name: 'toolproof_tool_call_normalizations_total',
    help: 'Structured tool calls from the backend that needed fixing: duplicate index, duplicate id, truncated arguments.',
    labels: 'model kind',
  },
} as const satisfies Record<string, MetricSpec>;

type Table = typeof METRICS;
/** 'model kind' -> 'model' | 'kind'. */
type Words<S extends string> = S extends `${infer Head} ${infer Rest}`
  ? Head | Words<Rest>
  : S extends ''
    ? never
    : S;
type LabelOf<S extends MetricSpec> = Words<S['labels']>;
/** The prom-client metric a spec declares, typed with its label names. */
type MetricOf<S extends MetricSpec> = S['type'] extends 'counter'
  ? Counter<LabelOf<S>>
  : S['type'] extends 'gauge'
    ? Gauge<LabelOf<S>>
    : Histogram<LabelOf<S>>;
type Collects<T extends Record<string, MetricSpec>> = {
  [K in keyof T]?: (this: MetricOf<T[K]>) => void;
};

/**
 * The table turned into prom-client metrics registered in `registers`, in the table's order;
 * `collects` gives a metric the collect() prom-client calls before each read.
 */
function buildMetrics<T extends Record<string, MetricSpec>>(
  table: T,
  registers: Registry[],
  collects: Collects<T>,
): { [K in keyof T]: MetricOf<T[K]> } {
  const built: Record<string, Counter | Gauge | Histogram> = {};
  for (const [key, spec] of Object.entries(table)) {
    // prom-client assigns its whole configuration onto the metric: only its own keys, and none undefined.
    const labelNames = spec.labels === '' ? [] : spec.labels.split(' ');
    const config = { name: spec.name, help: spec.help, labelNames, registers };
    const collect = collects[key] as (() => void) | undefined;
    if (spec.aggregator !== undefined) Object.assign(config, { aggregator: spec.aggregator });
    if (collect !== undefined) Object.assign(config, { collect });
    if (spec.type === 'counter') built[key] = new Counter(config);
    else if (spec.type === 'gauge') built[key] = new Gauge(config);
    else built[key] = new Histogram({ ...config, buckets: [...(spec.buckets ?? LATENCY_BUCKETS)] });
  }
  return built as { [K in keyof T]: MetricOf<T[K]> };
}

/**
 * prom-client's default metrics (process CPU, memory, GC, event-loop delay), collected once per
 * process and registered in every registry that shows them: each collectDefaultMetrics() call
 * starts a GC PerformanceObserver and an event-loop delay histogram that nothing can stop, so a
 * process that builds app after app (the test suite's workers, hundreds each) gained a pair with
 * every one, all called on every GC. Their values are the process's own, the same for each app.
 */
let processDefaults: Registry | undefined;

function registerDefaultMetrics(registry: Registry): void {
  if (!processDefaults) {
    processDefaults = new Registry();
    collectDefaultMetrics({ register: processDefaults });
  }
  for (const metric of processDefaults.getMetricsAsArray())
    registry.registerMetric(metric as unknown as Metric);
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) registerDefaultMetrics(registry);
  /** What /metrics shows: this process's registry, or the whole worker group's (server/cluster.ts). */
  let exposition: () => Promise<string> = () => registry.metrics();
  let fallbackSource: (() => Array<[string, string]>) | undefined;
  let openStreamsSource: (() => number) | undefined;
  let responsesStoreSource: (() => number) | undefined;
  /** Pairs ever reported active: they drop back to 0 (not vanish) so the alert resolves. */
  const fallbackSeen = new Set<string>();

  const m = buildMetrics<Table>(METRICS, [registry], {
    // Recomputed from the memory at every collection (also when the cluster primary gathers
    // the workers' values), so an expired memory reads 0 without waiting for a request.
    toolChoiceFallbackActive() {
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
    openStreams() {
      if (openStreamsSource) this.set(openStreamsSource());
    },
    responsesStoreBytes() {
      if (responsesStoreSource) this.set(responsesStoreSource());
    },
  });
  return {
    registry,
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
    /** Where toolproof_responses_store_bytes reads the Responses item store's bytes. */
    followResponsesStore(source: () => number): void {
      responsesStoreSource = source;
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
