/**
 * Policy effects -> the request's trace and metrics. The only place that knows which effect
 * kinds feed which counters; policies stay ignorant of metrics.
 */
import type { PolicyEffect } from '../../policies/types.js';
import type { LeakRecord } from '../../parsers/types.js';
import type { ChatCall, ChatDeps } from './context.js';

/** toolproof_schemas_unenforced_total's causes: a closed set. */
const UNENFORCED_CAUSES = new Set(['budget', 'cost', 'schema', 'pattern']);

function isLeak(detail: unknown): detail is LeakRecord {
  return !!detail && typeof detail === 'object' && typeof (detail as LeakRecord).format === 'string';
}

export function recordPolicyEffects(call: ChatCall, deps: ChatDeps, effects: readonly PolicyEffect[]): void {
  const model = call.route.name;
  const m = deps.metrics;
  const t = call.trace;
  // concat sizes the array to its elements (push() onto [] reserves 17 slots): the trace lives
  // as long as the request, an open stream included.
  if (effects.length > 0) t.effects = t.effects.concat(effects);
  for (const e of effects) {
    const n = e.count ?? 1;
    switch (e.policy) {
      case 'history-repair':
        t.repairs[e.kind] = (t.repairs[e.kind] ?? 0) + n;
        m.historyRepairs.labels(model, e.kind).inc(n);
        break;
      case 'force-tool-use':
        if (e.kind === 'forced') {
          t.forced = true;
          const choice = (e.detail as { toolChoice?: string } | undefined)?.toolChoice ?? 'required';
          t.toolChoiceSent = choice;
          m.hot.forced(model, choice).inc();
        } else if (e.kind === 'final-answer') {
          t.finalAnswer = true;
          m.hot.finalAnswers(model).inc();
        } else if (e.kind === 'forced-but-prose') {
          m.forcedButProse.labels(model).inc();
        } else if (e.kind === 'final-answer-raw' || e.kind === 'final-answer-invalid') {
          t.finalAnswerProblems[e.kind] = (t.finalAnswerProblems[e.kind] ?? 0) + n;
          m.finalAnswerProblems.labels(model, e.kind === 'final-answer-raw' ? 'raw' : 'invalid').inc(n);
        }
        break;
      case 'leak-recovery':
        if (isLeak(e.detail)) {
          const leak = e.detail;
          t.leaks.push({
            format: leak.format,
            source: leak.source,
            outcome: leak.outcome,
            ...(leak.backendHint ? { backendHint: leak.backendHint } : {}),
            ...(leak.reason ? { reason: leak.reason } : {}),
          });
          m.leaks.labels(model, leak.format, leak.source, leak.outcome, call.api).inc();
        }
        break;
      case 'client-constraints':
        t.constraints[e.kind] = (t.constraints[e.kind] ?? 0) + n;
        m.clientConstraints.labels(model, e.kind).inc(n);
        break;
      case 'normalize-tool-calls':
        t.normalizations[e.kind] = (t.normalizations[e.kind] ?? 0) + n;
        m.normalizations.labels(model, e.kind).inc(n);
        break;
      case 'corrective-retry':
        if (e.kind === 'validation-failed') {
          const detail = e.detail as { tool?: unknown; reason?: unknown } | undefined;
          const tool = String(detail?.tool ?? 'unknown');
          t.validationFailures.push({ tool, detail: e.detail });
          // Label values stay a small set: a name the model invented is "undeclared", and
          // declared names past the first few hundred share "other".
          const label =
            detail?.reason === 'undeclared-tool' ? 'undeclared' : deps.toolLabels.label(tool.slice(0, 64));
          m.argumentValidationFailures.labels(model, label).inc();
        } else if (e.kind === 'schema-unenforced') {
          const d = e.detail as { tool?: unknown; reasons?: unknown; cause?: unknown } | undefined;
          t.unenforced.push({
            tool: String(d?.tool ?? ''),
            reasons: Array.isArray(d?.reasons) ? d.reasons.map(String) : [],
          });
          const cause = UNENFORCED_CAUSES.has(String(d?.cause)) ? String(d?.cause) : 'schema';
          m.schemasUnenforced.labels(model, cause).inc();
        } else if (e.kind === 'retry') {
          const reason = String((e.detail as { reason?: unknown } | undefined)?.reason ?? 'invalid');
          t.retries.push({ reason });
        }
        break;
      default:
        break;
    }
  }
}

/**
 * Choices the upstream sent beyond the request's `n` (askedChoicesOf), dropped: counted as a
 * normalization, once per attempt, streamed or not.
 */
export function recordUnaskedChoices(call: ChatCall, deps: ChatDeps, dropped: number): void {
  recordPolicyEffects(call, deps, [
    { policy: 'normalize-tool-calls', kind: 'unasked-choice', count: dropped },
  ]);
}

/** After a retried attempt finished: did the retry fix it? */
export function settleRetry(call: ChatCall, deps: ChatDeps, outcome: 'fixed' | 'failed' | 'aborted'): void {
  const pending = call.trace.retries.at(-1);
  if (!pending || pending.outcome) return;
  pending.outcome = outcome;
  deps.metrics.retries.labels(call.route.name, pending.reason, outcome).inc();
}

/** The attempt's answer came from the synthetic final-answer tool (streamed live, if streaming). */
export function finalAnswerIn(effects: readonly PolicyEffect[]): boolean {
  return effects.some((e) => e.policy === 'force-tool-use' && e.kind === 'final-answer');
}
