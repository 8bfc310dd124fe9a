/**
 * Policy effects -> the request's trace and metrics. Each policy declares what its effects mean
 * (Policy.describeEffect, an EffectRecord); this applies those records, knowing counters and
 * trace fields but no policy.
 */
import { joined } from '../../protocol/append-all.js';
import { describeEffect, type PolicyEffect, unaskedChoicesEffect } from '../../policies/registry.js';
import type { EffectTallyName } from '../../policies/types.js';
import type { Metrics } from '../metrics.js';
import type { ChatCall, ChatDeps } from './context.js';
import { captureEffects } from '../capture/recorder.js';

/** toolproof_schemas_unenforced_total's causes: a closed set. */
const UNENFORCED_CAUSES = new Set(['budget', 'cost', 'schema', 'pattern']);

/** The counter of each of the trace's tallies (labelled model, key). */
const TALLY_COUNTERS: Readonly<Record<EffectTallyName, (m: Metrics) => Metrics['historyRepairs']>> = {
  repairs: (m) => m.historyRepairs,
  normalizations: (m) => m.normalizations,
  constraints: (m) => m.clientConstraints,
  finalAnswerProblems: (m) => m.finalAnswerProblems,
};

export function recordPolicyEffects(call: ChatCall, deps: ChatDeps, effects: readonly PolicyEffect[]): void {
  const model = call.route.name;
  const m = deps.metrics;
  const t = call.trace;
  // An array sized to its elements (joined: not push, not concat): the trace lives as long as
  // the request, an open stream included.
  if (effects.length > 0) {
    t.effects = joined(t.effects, effects);
    call.span?.effects(effects, t.attempts);
    if (call.capture) captureEffects(call, effects);
  }
  for (const e of effects) {
    const r = describeEffect(e);
    if (!r) continue;
    switch (r.type) {
      case 'tally': {
        const tally = t[r.tally];
        tally[r.key] = (tally[r.key] ?? 0) + r.count;
        TALLY_COUNTERS[r.tally](m).labels(model, r.label).inc(r.count);
        break;
      }
      case 'forced':
        t.forced = true;
        t.toolChoiceSent = r.toolChoice;
        m.hot.forced(model, r.toolChoice).inc();
        break;
      case 'final-answer':
        t.finalAnswer = true;
        m.hot.finalAnswers(model).inc();
        break;
      case 'forced-but-prose':
        m.forcedButProse.labels(model).inc();
        break;
      case 'leak': {
        const leak = r.leak;
        t.leaks.push({
          format: leak.format,
          source: leak.source,
          outcome: leak.outcome,
          ...(leak.backendHint ? { backendHint: leak.backendHint } : {}),
          ...(leak.reason ? { reason: leak.reason } : {}),
        });
        m.leaks.labels(model, leak.format, leak.source, leak.outcome, call.api).inc();
        break;
      }
      case 'validation-failed':
        t.validationFailures.push({ tool: r.tool, detail: r.detail });
        // Label values stay a small set: a name the model invented is "undeclared", and a
        // declared one is "other" until a call of it passed the checks (tool-labels.ts).
        m.argumentValidationFailures
          .labels(model, r.undeclared ? 'undeclared' : deps.toolLabels.label(r.tool.slice(0, 64)))
          .inc();
        break;
      case 'schema-unenforced':
        t.unenforced.push({ tool: r.tool, reasons: r.reasons });
        m.schemasUnenforced.labels(model, UNENFORCED_CAUSES.has(r.cause) ? r.cause : 'schema').inc();
        break;
      case 'retry':
        t.retries.push({ reason: r.reason });
        if (r.leak) m.leakReasks.labels(model, r.leak.format, r.leak.cause).inc();
        break;
      case 'schema-answer':
        t.schemaAnswer = r.outcome;
        m.schemaAnswers.labels(model, SCHEMA_OUTCOMES.has(r.outcome) ? r.outcome : 'invalid').inc();
        break;
      case 'degraded':
        t.degraded[r.kind] = (t.degraded[r.kind] ?? 0) + r.count;
        m.degradedContent.labels(model, call.api, r.kind).inc(r.count);
        break;
    }
  }
}

/** The outcomes toolproof_schema_answers_total may carry (a closed set of label values). */
const SCHEMA_OUTCOMES = new Set(['valid', 'invalid', 'not-json', 'unchecked']);

/**
 * Choices the upstream sent beyond the request's `n` (askedChoicesOf), dropped: counted as a
 * normalization, once per attempt, streamed or not.
 */
export function recordUnaskedChoices(call: ChatCall, deps: ChatDeps, dropped: number): void {
  recordPolicyEffects(call, deps, [unaskedChoicesEffect(dropped)]);
}

/** After a retried attempt finished: did the retry fix it? */
export function settleRetry(call: ChatCall, deps: ChatDeps, outcome: 'fixed' | 'failed' | 'aborted'): void {
  const pending = call.trace.retries.at(-1);
  if (!pending || pending.outcome) return;
  pending.outcome = outcome;
  call.span?.event('toolproof.retry_settled', {
    'toolproof.retry.reason': pending.reason,
    'toolproof.retry.outcome': outcome,
  });
  deps.metrics.retries.labels(call.route.name, pending.reason, outcome).inc();
}

/** The attempt's answer came from the synthetic final-answer tool (streamed live, if streaming). */
export function finalAnswerIn(effects: readonly PolicyEffect[]): boolean {
  return effects.some((e) => describeEffect(e)?.type === 'final-answer');
}
