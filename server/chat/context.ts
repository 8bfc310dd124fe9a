/**
 * One typed context per client chat request, instead of long parameter lists: the client's
 * request, where it goes, the abort signal tied to the client's connection, and the trace.
 */
import type { ToolproofError } from '../../protocol/errors.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import type { CompileBudget, Policy, PolicyContext } from '../../policies/types.js';
import type { PolicyEffect } from '../../policies/registry.js';
import type { AbortLike } from '../abort.js';
import type { AdmissionOwner, PriorityClass } from '../admission.js';
import type { KeyWaitTicket } from '../key-waits.js';
import type { CompileBudgets } from '../compile-budget.js';
import type { Config } from '../config.js';
import type { FallbackMemory } from '../fallback-memory.js';
import type { Metrics } from '../metrics.js';
import type { ResolvedRoute } from '../routing.js';
import type { ToolLabels } from '../tool-labels.js';
import { describerOf, type RequestPhase } from '../../policies/composition.js';
import type { HarnessTrace } from './trace.js';
import type { RequestSpan } from '../tracing/types.js';
import { type DoorFacts, requestFacts } from './prepare.js';
import type { RecordWriter } from '../capture/ring.js';
import type { DocumentLookup } from '../../protocol/document-text.js';
import { StringSet } from '../../protocol/string-set.js';
import type { DocumentReader } from '../documents/document-reader.js';

export interface ChatDeps {
  config: Config;
  /** The upstream clients (a fallback route resolves its client here). */
  upstreams?: import('../upstream.js').Upstreams;
  metrics: Metrics;
  memory: FallbackMemory;
  /** What upstreams refused of their models (Policy.refusal's facts), until it expires (refusals.ts). */
  refusals?: FallbackMemory;
  /** Context windows upstreams named refusing a prompt, where none was known (context-window.ts). */
  windows?: FallbackMemory;
  policies: readonly Policy<PolicyEffect>[];
  /** Saves a raw upstream response for diagnosis when configured (rawDumpDir). */
  dumpRaw?: (reqId: string, attempt: number, text: string) => void;
  /** Bounded label values for tool names in metrics. */
  toolLabels: ToolLabels;
  /** toolproof's own bug surfaced in a request: logged with its stack and counted. */
  onInternalError?: (call: ChatCall, err: unknown) => void;
  /** What compiling client schemas may cost (per request and per process); unlimited when absent. */
  compileBudgets?: CompileBudgets;
  /** Reads a request's PDFs off the event loop before its request policies run (server/documents/). */
  documents?: DocumentReader;
}

/**
 * The front door a request came in by (log line and metrics label): a door's `api` in
 * FRONT_DOORS (server/front-doors/index.ts, whose FrontDoorApi is the union). A plain string
 * here: the doors import this module, so naming their table would make a cycle of types.
 */
export type Api = string;

export type { ResolvedRoute } from '../routing.js';

export interface PhaseInfo {
  /** The request went upstream with the synthetic tool and tool_choice "required". */
  forcedRequired: boolean;
}

/** Never written to: runRequestPolicies gives every phase its own map. */
const NO_MEMOS = new Map<string, unknown>();

/** Does some message carry tool calls? (A property read per message.) */
function hasToolCalls(request: ChatCompletionRequest): boolean {
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return false;
  for (const m of messages as unknown[])
    if (typeof m === 'object' && m !== null && (m as { tool_calls?: unknown }).tool_calls != null)
      return true;
  return false;
}

export class ChatCall {
  phase: PhaseInfo & RequestPhase<PolicyEffect>;
  retriesUsed = 0;
  /** Token usage summed over attempts, when the upstream reported it. */
  usage: Usage | undefined;
  /** A non-streamed pass-through body: its usage is read from it only when asked (callUsage). */
  relayedBody: Buffer | undefined;
  /** The error a stream ended with after its headers were sent (for the log line). */
  streamError: ToolproofError | undefined;
  /** Effects of the response attempt in progress (policies later in the table read them). */
  attemptEffects: PolicyEffect[] = [];
  /** llama-server's timings summed over attempts (prompt-cache.ts), when it sent them. */
  timings: { prompt: number; cached: number } | undefined;
  /** The client's stream got an opening role chunk: a byte of the answer went out. */
  roleSent = false;
  /** The choices (indexes) whose opening role chunk the client got: a retry leaves theirs out. */
  readonly rolesSent = new Set<number>();
  /** Completion tokens of attempts toolproof discarded for a retry. */
  discardedTokens = 0;
  /** The first route's fallback models (names) not tried yet, in order. */
  fallbacksLeft: string[] | undefined;
  /** The request's priority class (server/priority.ts): its place in the admission queue. */
  priority: PriorityClass = 'normal';
  /** Which replica the conversation belongs to (affinity.ts); set when the upstream has several. */
  affinityKey: string | undefined;
  /** Who it waits as in the upstream's admission queue (keys.ts admissionOwner); set by start. */
  owner: AdmissionOwner | undefined;
  /** Its client's key, whose revocation ends its first wait for a slot (key-waits.ts); set by start. */
  keyWait: KeyWaitTicket | undefined;
  /** What compiling this request's schemas may still cost (every attempt draws on it). */
  compileBudget: CompileBudget | undefined;
  /** This request's capture record while it is written (capture on only; docs/inspect.md). */
  capture: RecordWriter | undefined;
  /** This request's PDFs as read before the request policies ran (the documents policy reads them). */
  documents: DocumentLookup | undefined;
  /** The streamed message's identity, from the upstream's chunks (closing frames reuse it). */
  streamIdentity: { id: string; model: string; created: number };
  /** The request's server span (tracing on): attempts open theirs under it, decisions are its events. */
  span: RequestSpan<ChatCall> | undefined = undefined;

  /**
   * The client's bytes while they are what goes upstream (see rawBody). Dropped once the request
   * policies rewrite the request: an open forced stream then holds no copy of the client's body.
   */
  private raw: Buffer | undefined;
  private sourceKept = false;
  /** The request's facts (tool set, upstream name, the door's), built once on first use (prepare.ts). */
  private facts: Pick<PolicyContext, 'tools' | 'upstreamModel' | 'hostedTools' | 'streamUsage'> | undefined;
  /** What the front door's translation said of the request (hosted tools left out); set before prepare. */
  doorFacts: DoorFacts = {};
  /** The request policies ran (prepareCallRequest): the phase is the prepared request. */
  prepared = false;
  /** The facts the upstream refused of this request's attempts (Policy.refusal): PolicyContext.refused.now. */
  readonly refusedNow = new Set<string>();
  /** The facts remembered from earlier requests for this route's upstream and model (refusals.ts). */
  refusedRemembered: ReadonlySet<string> = new Set();
  /** Values of the request refused one by one, now or remembered (UpstreamRefusal.values). */
  refusedValues = new StringSet();
  /** What an unsure refusal taught, kept until an attempt is answered (UpstreamRefusal.values.unsure). */
  readonly onAnswered: Array<() => void> = [];
  /** The window an overflow refusal of this request named, once learnt (attempt.ts: fitLearntWindow). */
  windowLearnt: number | undefined = undefined;
  /** How many times the estimate the backend counts, learnt or remembered (PolicyContext.estimateScale). */
  estimateScale: number | undefined = undefined;
  /** The bytes a token a refusal of this session's prompt counted (PolicyContext.bytesPerToken). */
  bytesPerToken: number | undefined = undefined;

  constructor(
    readonly reqId: string,
    readonly original: ChatCompletionRequest,
    /** The client's own bytes when `original` is exactly what it sent; undefined otherwise. */
    rawBody: Buffer | undefined,
    /** Where it goes; a fallback before the first byte (attempt.ts) replaces it. */
    public route: ResolvedRoute,
    /** The policies enabled for this model, in table order (a fallback model's replace them). */
    public policies: readonly Policy<PolicyEffect>[],
    readonly signal: AbortLike,
    readonly trace: HarnessTrace,
    readonly forwardHeaders: Record<string, string>,
    private requiredRejected: boolean,
    readonly api: Api = 'chat',
  ) {
    this.raw = rawBody;
    // History repair writes a call's object-form arguments as text before setPhase: such a
    // history has its client text kept first (only histories with tool calls pay the scan).
    if (rawBody !== undefined && hasToolCalls(original)) this.keepSource();
    // Replaced by the request policies' phase before anything reads it (prepareRequest).
    this.phase = {
      request: original,
      memos: NO_MEMOS,
      effects: [],
      error: undefined,
      forcedRequired: false,
      needsResponse: false,
    };
    this.streamIdentity = {
      id: 'chatcmpl-toolproof',
      model: original.model,
      created: Math.floor(Date.now() / 1000),
    };
  }

  private admissionRequest:
    | { cls: PriorityClass; owner?: AdmissionOwner; key?: KeyWaitTicket; queued(ms: number): void }
    | undefined;

  /** What the upstream's admission gate is told of this call (one object for every attempt). */
  admission(): { cls: PriorityClass; owner?: AdmissionOwner; key?: KeyWaitTicket; queued(ms: number): void } {
    this.admissionRequest ??= {
      cls: this.priority,
      ...(this.owner === undefined ? {} : { owner: this.owner }),
      ...(this.keyWait === undefined ? {} : { key: this.keyWait }),
      queued: (ms) => {
        this.trace.queuedMs += ms;
      },
    };
    return this.admissionRequest;
  }

  /**
   * `original` as bytes, to forward untouched: the client's own when kept, otherwise serialized
   * (a request from another front door, or one whose bytes were dropped by setPhase and that
   * goes upstream unchanged after all: the same JSON value).
   */
  get rawBody(): Buffer {
    this.raw ??= Buffer.from(stringifyJson(this.original, this.original));
    return this.raw;
  }

  /** Starts judging a response attempt: the effects list its policies append to. */
  beginAttempt(): PolicyEffect[] {
    this.attemptEffects = [];
    return this.attemptEffects;
  }

  /**
   * The route changed (a fallback model): the request's facts are read again for it, and its own
   * policies and remembered required-rejection replace the first model's.
   */
  routeChanged(policies: readonly Policy<PolicyEffect>[], requiredRejected: boolean): void {
    this.facts = undefined;
    this.policies = policies;
    this.requiredRejected = requiredRejected;
  }

  policyContext(): PolicyContext {
    return {
      model: this.route.name,
      settings: this.route.settings,
      requiredRejected: this.requiredRejected || this.trace.fallback,
      ...(this.refusedNow.size > 0 || this.refusedRemembered.size > 0 || this.refusedValues.size > 0
        ? {
            refused: {
              now: this.refusedNow,
              remembered: this.refusedRemembered,
              ...(this.refusedValues.size > 0 ? { values: this.refusedValues } : {}),
            },
          }
        : {}),
      ...(this.estimateScale !== undefined ? { estimateScale: this.estimateScale } : {}),
      ...(this.bytesPerToken !== undefined ? { bytesPerToken: this.bytesPerToken } : {}),
      attempt: this.trace.attempts,
      retriesUsed: this.retriesUsed,
      attemptEffects: this.attemptEffects,
      compileBudget: this.compileBudget,
      describeEffect: describerOf(this.policies),
      ...(this.facts ??= requestFacts(this.route, this.original, this.doorFacts)),
      documents: this.documents,
    };
  }

  setPhase(phase: RequestPhase<PolicyEffect>): void {
    // Forced = toolproof itself turned the client's choice into "required" (a fallback may undo it).
    const forcedRequired =
      phase.request.tool_choice === 'required' && this.original.tool_choice !== 'required';
    // A literal, not a spread: in the server a spread copy got a hidden class (map and
    // descriptors, ~200 bytes) of its own per request, kept for as long as the stream is open.
    this.phase = {
      request: phase.request,
      memos: phase.memos,
      effects: phase.effects,
      error: phase.error,
      forcedRequired,
      needsResponse: phase.needsResponse === true,
    };
    if (phase.request !== this.original) {
      this.keepSource();
      this.raw = undefined;
    }
  }

  /**
   * A rewritten request is serialized, not forwarded: what of the client's numbers and key order
   * JSON.stringify would change is kept from its bytes (protocol/lossless-json.ts), once, while
   * they are at hand.
   */
  private keepSource(): void {
    if (this.sourceKept || this.raw === undefined) return;
    this.sourceKept = true;
    keepSourceText(this.original, this.raw);
  }
}
