/**
 * Non-streaming chat completion: request policies -> upstream (with fallback once) -> leak
 * recovery and response policies -> client; a corrective retry loops at most maxRetries times.
 */
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletion, ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import { openUpstream, readText } from './attempt.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects, settleRetry } from './effects.js';
import { recoverErrorCompletion } from './error-recovery.js';
import { runRequestPolicies, runResponsePolicies } from './policy-runner.js';
import { scanJsonValue } from '../../parsers/util/json-scan.js';
import { leaksFromEffects } from '../../policies/corrective-retry.js';
import { addUsage, type FinalKind } from './trace.js';

export interface ChatOutcome {
  status: number;
  /** A parsed body to serialize, or the upstream's raw bytes relayed untouched (pass-through). */
  body: ChatCompletion | string;
  usage?: Usage;
}

export function hasTools(request: ChatCompletionRequest): boolean {
  return Array.isArray(request.tools) && request.tools.length > 0;
}

/** Requests without tools (and no forced recovery) are relayed byte for byte: nothing to fix. */
export function isPassthrough(call: ChatCall, request: ChatCompletionRequest): boolean {
  const s = call.route.settings;
  return s.recovery === 'off' || (s.recovery === 'auto' && !hasTools(request));
}

export function prepareRequest(call: ChatCall, deps: ChatDeps): ChatCompletionRequest {
  const phase = runRequestPolicies(call.policies, call.original, call.policyContext());
  recordPolicyEffects(call, deps, phase.effects);
  if (phase.error) throw phase.error;
  call.setPhase(phase);
  return phase.request;
}

export function classifyFinal(completion: ChatCompletion, finalAnswer: boolean): FinalKind {
  const msg = completion.choices?.[0]?.message;
  const calls = msg?.tool_calls?.length ?? 0;
  const content = typeof msg?.content === 'string' && msg.content.length > 0;
  if (calls > 0 && content) return 'both';
  if (calls > 0) return 'tool_calls';
  return finalAnswer ? 'final_answer' : 'content';
}

/**
 * Reads only the top-level `usage` object of a relayed body (for the log line), without parsing
 * the whole response: backends put it last, so the last `"usage":` that opens an object is it.
 */
export function usageFromRaw(text: string): Usage | undefined {
  const key = text.lastIndexOf('"usage"');
  if (key < 0) return undefined;
  let i = key + 7;
  while (i < text.length && (text[i] === ' ' || text[i] === ':' || text[i] === '\n')) i++;
  const scanned = scanJsonValue(text, i);
  if (!scanned || scanned.end < 0) return undefined;
  try {
    const u = JSON.parse(text.slice(i, scanned.end)) as Usage;
    return u && typeof u === 'object' && typeof u.total_tokens === 'number' ? u : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Memos for one response attempt: the request side's, plus what corrective-retry needs to see
 * from earlier in the same pass (leak records, read lazily after leak-recovery has run).
 */
export function attemptMemos(call: ChatCall): Map<string, unknown> {
  call.attemptEffects = [];
  const effects = call.attemptEffects;
  const memos = new Map(call.phase.memos);
  const force = call.phase.memos.get('force-tool-use') as { finalAnswerName?: string | null } | undefined;
  memos.set('corrective-retry', {
    leaks: () => leaksFromEffects(effects),
    finalAnswerName: force?.finalAnswerName ?? null,
  });
  return memos;
}

export async function completeChat(call: ChatCall, deps: ChatDeps): Promise<ChatOutcome> {
  let request = prepareRequest(call, deps);
  const passthrough = isPassthrough(call, request);
  const policies = call.policies;
  let usage: Usage | undefined;
  for (;;) {
    const opened = await openUpstream(call, deps, request);
    let completion: ChatCompletion;
    if (opened.kind === 'error') {
      const recovered = passthrough ? null : recoverErrorCompletion(call, opened.request, opened.body);
      if (!recovered) {
        settleRetry(call, deps, 'failed');
        throw opened.error;
      }
      recordPolicyEffects(call, deps, recovered.effects);
      completion = recovered.completion;
    } else {
      const text = await readText(opened.res, Number.POSITIVE_INFINITY);
      deps.dumpRaw?.(call.reqId, call.trace.attempts, text);
      if (passthrough) {
        call.trace.finalKind = 'passthrough';
        const u = usageFromRaw(text);
        call.usage = u;
        return { status: opened.res.status, body: text, ...(u ? { usage: u } : {}) };
      }
      try {
        completion = JSON.parse(text) as ChatCompletion;
      } catch (err) {
        throw new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
          message: `The upstream ${call.route.client.label} sent a body that is not JSON.`,
          cause: err,
        });
      }
      if (!completion || !Array.isArray(completion.choices)) {
        throw new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
          message: `The upstream ${call.route.client.label} sent a response without choices.`,
        });
      }
    }
    usage = addUsage(usage, completion.usage);
    const decision = runResponsePolicies(
      policies,
      completion,
      call.policyContext(),
      attemptMemos(call),
      opened.request,
      call.original,
      call.attemptEffects,
    );
    // The previous attempt's retry (if any) is settled by what this attempt produced.
    settleRetry(call, deps, decision.action === 'retry' ? 'failed' : 'fixed');
    const canRetry = call.retriesUsed < call.route.settings.maxRetries && !call.signal.aborted;
    recordPolicyEffects(
      call,
      deps,
      decision.action === 'retry' && !canRetry
        ? decision.effects.filter((e) => e.kind !== 'retry')
        : decision.effects,
    );
    if (decision.action === 'retry' && canRetry) {
      call.retriesUsed++;
      request = decision.request;
      continue;
    }
    const final = decision.action === 'retry' ? decision.failed : decision.response;
    if (usage) final.usage = usage;
    call.usage = usage;
    const finalAnswer = decision.effects.some(
      (e) => e.policy === 'force-tool-use' && e.kind === 'final-answer',
    );
    call.trace.finalKind = classifyFinal(final, finalAnswer);
    return { status: 200, body: final, ...(usage ? { usage } : {}) };
  }
}
