/**
 * One typed context per client chat request, instead of long parameter lists: the client's
 * request, where it goes, the abort signal tied to the client's connection, and the trace.
 */
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import type { ModelSettings } from '../../protocol/settings.js';
import type { Policy, PolicyContext, PolicyEffect } from '../../policies/types.js';
import type { AbortLike } from '../abort.js';
import type { Config } from '../config.js';
import type { FallbackMemory } from '../fallback-memory.js';
import type { Metrics } from '../metrics.js';
import type { UpstreamClient } from '../upstream.js';
import type { RequestPhase } from './policy-runner.js';
import type { HarnessTrace } from './trace.js';

export interface ChatDeps {
  config: Config;
  metrics: Metrics;
  memory: FallbackMemory;
  policies: readonly Policy[];
  /** Saves a raw upstream response for diagnosis when configured (rawDumpDir). */
  dumpRaw?: (reqId: string, attempt: number, text: string) => void;
}

export interface ResolvedRoute {
  /** The model name as the client sent it (metrics label). */
  name: string;
  settings: ModelSettings;
  client: UpstreamClient;
  upstreamModel?: string;
}

export interface PhaseInfo {
  /** The request went upstream with the synthetic tool and tool_choice "required". */
  forcedRequired: boolean;
}

export class ChatCall {
  phase: PhaseInfo & RequestPhase;
  retriesUsed = 0;
  /** Token usage summed over attempts, when the upstream reported it. */
  usage: Usage | undefined;
  /** The error a stream ended with after its headers were sent (for the log line). */
  streamError: ToolproofError | undefined;
  /** Effects of the response attempt in progress (policies later in the table read them). */
  attemptEffects: PolicyEffect[] = [];

  constructor(
    readonly reqId: string,
    readonly original: ChatCompletionRequest,
    readonly rawBody: Buffer,
    readonly route: ResolvedRoute,
    /** The policies enabled for this model, in table order. */
    readonly policies: readonly Policy[],
    readonly signal: AbortLike,
    readonly trace: HarnessTrace,
    readonly forwardHeaders: Record<string, string>,
    private readonly requiredRejected: boolean,
  ) {
    this.phase = { request: original, memos: new Map(), effects: [], forcedRequired: false };
  }

  policyContext(): PolicyContext {
    return {
      model: this.route.name,
      settings: this.route.settings,
      requiredRejected: this.requiredRejected || this.trace.fallback,
      attempt: this.trace.attempts,
      retriesUsed: this.retriesUsed,
    };
  }

  setPhase(phase: RequestPhase): void {
    const sent = phase.request;
    const memo = phase.memos.get('force-tool-use') as { forced?: boolean } | undefined;
    this.phase = { ...phase, forcedRequired: memo?.forced === true && sent.tool_choice === 'required' };
  }
}
