/**
 * corrective-retry's judgement of one assistant turn, shared by its two halves (index.ts for a
 * whole response, stream.ts for a stream's assembled turn): the call checks, the client's
 * tool_choice, unparsed leaks, and the retry request when one is due.
 */
import type { ChatCompletionRequest, ToolCall } from '../../protocol/openai.js';
import type { EffectLeak, PolicyContext } from '../types.js';
import { toolSetOf } from '../kit/tool-set.js';
import { attemptFinalAnswer, attemptForcedButProse, attemptLeaks } from '../kit/attempt-facts.js';
import type { AnswerFormat } from '../kit/answer-format.js';
import { isPlainObject } from '../kit/canonical-arguments.js';
import {
  buildCatalogue,
  type CallCheck,
  checkCalls,
  type ToolCatalogue,
  proseAnswerFeedback,
  proseFeedback,
  unparsedLeakFeedback,
} from './call-checks.js';
import { clientToolChoice } from '../kit/client-choice.js';
import { buildRetryRequest } from './retry-request.js';

import {
  CORRECTIVE_RETRY_POLICY,
  type CorrectiveRetryEffect,
  type LeakReaskCause,
  leakReaskCause,
  type RetryReason,
} from './effects.js';

export type LeakInput = Pick<EffectLeak, 'format' | 'outcome'> & Partial<EffectLeak>;

/** What the pipeline hands this policy as its memo (it has no onRequest of its own). */
export interface CorrectiveRetryMemo {
  /** Leak records of this attempt; only 'unrecovered' ones trigger a retry. */
  leaks?: readonly LeakInput[] | (() => readonly LeakInput[]);
  /** The synthetic final-answer tool's name, if one was sent (else inferred from sent vs original tools). */
  finalAnswerName?: string | null;
}

function memoOf(memo: unknown): CorrectiveRetryMemo {
  return isPlainObject(memo) ? (memo as CorrectiveRetryMemo) : {};
}

function allLeaksOf(memo: CorrectiveRetryMemo, ctx: PolicyContext): readonly LeakInput[] {
  // Without leaks in the memo, the leaks the composition collected from this attempt's effects.
  const leaks = typeof memo.leaks === 'function' ? memo.leaks() : (memo.leaks ?? attemptLeaks(ctx));
  return leaks ?? [];
}

function leaksOf(memo: CorrectiveRetryMemo, ctx: PolicyContext): readonly LeakInput[] {
  return allLeaksOf(memo, ctx).filter((l) => l.outcome === 'unrecovered');
}

/**
 * The leak a re-ask stands in for (toolproof_leak_reasks_total): the turn's first unrecovered
 * leak, else its first rejected one; none when every leak was read.
 */
function reaskedLeak(
  memo: CorrectiveRetryMemo,
  ctx: PolicyContext,
): { format: string; cause: LeakReaskCause } | undefined {
  const all = allLeaksOf(memo, ctx);
  const l = all.find((x) => x.outcome === 'unrecovered') ?? all.find((x) => x.outcome === 'rejected');
  return l ? { format: l.format, cause: leakReaskCause(l.outcome, l.reason) } : undefined;
}

/** Leak-recovery released call text past the held-text cap: a retry is certain when one is left. */
function hasTooLongLeak(memo: CorrectiveRetryMemo, ctx: PolicyContext): boolean {
  return leaksOf(memo, ctx).some((l) => l.reason === 'too-long');
}

interface CachedCatalogue {
  original: ChatCompletionRequest;
  finalAnswerName: string | undefined;
  catalogue: ToolCatalogue;
}

/**
 * One catalogue per request sent, shared by every choice judged against it: built per choice,
 * an answer with many choices cost choices x tools.
 */
const catalogues = new WeakMap<ChatCompletionRequest, CachedCatalogue>();

function catalogueOf(
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
  finalAnswerName: string | undefined,
  answer?: AnswerFormat,
): ToolCatalogue {
  const hit = catalogues.get(sent);
  if (hit && hit.original === original && hit.finalAnswerName === finalAnswerName) return hit.catalogue;
  const catalogue = buildCatalogue(sent, original, finalAnswerName, answer);
  catalogues.set(sent, { original, finalAnswerName, catalogue });
  return catalogue;
}

/** The memo for every choice after the first: leaks belong to the response as a whole. */
export function withoutLeaks(memo: unknown): CorrectiveRetryMemo {
  return { ...memoOf(memo), leaks: [] };
}

export interface Correction {
  effects: CorrectiveRetryEffect[];
  /** Set when a retry should be made. */
  retry?: { request: ChatCompletionRequest; reason: RetryReason };
}

/**
 * The decision for one assistant turn (shared by the streamed and non-streamed paths).
 * Exported so the pipeline can judge an assembled turn itself.
 */
export function correctTurn(
  turn: {
    content: string | null;
    toolCalls: readonly ToolCall[];
    finishReason?: string | null;
    /** The answer is longer than maxHeldBytes (answerChars): it is not judged, nor retried. */
    tooLong?: boolean;
  },
  ctx: PolicyContext,
  memo: unknown,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
): Correction {
  // No declared tools: nothing a call could be checked against (and no forced tool either).
  const tools = toolSetOf(ctx, original);
  if (!tools.any) return { effects: [] };
  const m = memoOf(memo);
  // Past the cap an answer is not judged, except call text that ran past the held-text cap while
  // a retry is left: that output is discarded however it ends (server/chat/early-stop.ts).
  if (turn.tooLong && !(ctx.retriesUsed < ctx.settings.maxRetries && hasTooLongLeak(m, ctx))) {
    return {
      effects: [
        {
          policy: CORRECTIVE_RETRY_POLICY,
          kind: 'not-judged',
          count: 1,
          detail: { reason: 'too-long', limit: ctx.settings.maxHeldBytes },
        },
      ],
    };
  }
  // The catalogue is only read by a check, a prose rule or leak feedback: a turn without calls
  // (a forced answer unwrapped into content, the usual end) does not build it.
  let catalogue: ToolCatalogue | undefined;
  const cat = (): ToolCatalogue =>
    (catalogue ??= catalogueOf(sent, original, m.finalAnswerName ?? tools.finalAnswerName, tools.answer));
  const choice = clientToolChoice(original);
  const checks: CallCheck[] =
    turn.toolCalls.length > 0
      ? checkCalls(turn.toolCalls, cat(), ctx.settings.validateArguments, choice, ctx.compileBudget)
      : [];
  const leaks = leaksOf(m, ctx);
  const effects: CorrectiveRetryEffect[] = [];
  const reasons: RetryReason[] = [];
  // "required" or a named tool answered in prose: the client's choice is part of the judgement.
  // Not a final answer already delivered (a named turn whose final_answer was past what can be
  // judged, force-tool-use): it streamed live, and a retry would add a second answer to it.
  const prose =
    turn.toolCalls.length === 0 &&
    choice.kind !== 'auto' &&
    choice.kind !== 'none' &&
    !attemptFinalAnswer(ctx)
      ? proseFeedback(choice, cat())
      : null;
  if (prose !== null) {
    reasons.push('prose-when-required');
    effects.push({
      policy: CORRECTIVE_RETRY_POLICY,
      kind: 'validation-failed',
      count: 1,
      detail: { tool: '(prose)', reason: 'prose-when-required', message: prose },
    });
  }
  // A forced turn whose answer the client asked in a JSON schema, answered in prose all the same
  // (sent as "auto" once the upstream refused "required"): the schema is on the answer tool only.
  const proseAnswer =
    prose === null &&
    turn.toolCalls.length === 0 &&
    tools.answer &&
    !tools.answer.bad &&
    attemptForcedButProse(ctx)
      ? proseAnswerFeedback(
          turn.content,
          m.finalAnswerName ?? tools.finalAnswerName,
          tools.answer,
          ctx.compileBudget,
        )
      : null;
  if (proseAnswer !== null) {
    reasons.push('prose-not-in-schema');
    effects.push({
      policy: CORRECTIVE_RETRY_POLICY,
      kind: 'validation-failed',
      count: 1,
      detail: { tool: '(prose)', reason: 'prose-not-in-schema', message: proseAnswer },
    });
  }
  for (const c of checks) {
    // A schema part toolproof could not enforce (a pattern RE2 cannot run, a schema too large or
    // deep to compile) is reported, so the log says the call was not fully checked.
    if (c.unenforced && c.unenforced.length > 0) {
      effects.push({
        policy: CORRECTIVE_RETRY_POLICY,
        kind: 'schema-unenforced',
        count: 1,
        detail: { tool: c.name, reasons: c.unenforced.slice(0, 8), cause: c.unenforcedBy ?? 'schema' },
      });
    }
    if (!c.problem) continue;
    reasons.push(c.problem);
    effects.push({
      policy: CORRECTIVE_RETRY_POLICY,
      kind: 'validation-failed',
      count: 1,
      detail: { tool: c.name, reason: c.problem, message: c.feedback, issues: c.issues },
    });
  }
  for (const l of leaks) {
    reasons.push('unparsed-leak');
    effects.push({
      policy: CORRECTIVE_RETRY_POLICY,
      kind: 'validation-failed',
      count: 1,
      detail: { tool: '(unparsed)', reason: 'unparsed-leak', format: l.format, leakReason: l.reason },
    });
  }
  const reason = reasons[0];
  if (reason === undefined) {
    if (ctx.retriesUsed > 0)
      effects.push({
        policy: CORRECTIVE_RETRY_POLICY,
        kind: 'retry-outcome',
        count: 1,
        detail: { outcome: 'fixed' },
      });
    return { effects };
  }
  // Cut off by max_tokens: the same budget would cut the retry too, so the turn goes back as it
  // is. Not call text past the held-text cap: that is invalid however it ends, and a stream stops
  // generating it at the cap (server/chat/early-stop.ts), before any finish_reason.
  const cutOff = turn.finishReason === 'length' && !leaks.some((l) => l.reason === 'too-long');
  if (cutOff || ctx.retriesUsed >= ctx.settings.maxRetries) {
    effects.push({
      policy: CORRECTIVE_RETRY_POLICY,
      kind: 'returned-invalid',
      count: 1,
      detail: { reasons: [...new Set(reasons)], retriesUsed: ctx.retriesUsed, cutOff },
    });
    return { effects };
  }
  const turnFeedback = [prose, proseAnswer, leaks.length > 0 ? unparsedLeakFeedback(leaks, cat()) : null]
    .filter((f): f is string => f !== null)
    .join('\n');
  const request = buildRetryRequest(
    sent,
    turn.content,
    checks,
    turnFeedback === '' ? undefined : turnFeedback,
  );
  const leak = reaskedLeak(m, ctx);
  effects.push({
    policy: CORRECTIVE_RETRY_POLICY,
    kind: 'retry',
    count: 1,
    detail: { reason, reasons: [...new Set(reasons)], ...(leak ? { leak } : {}) },
  });
  return { effects, retry: { request, reason } };
}
