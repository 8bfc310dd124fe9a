/** corrective-retry's effects, and what each means for the trace and metrics. */
import type { EffectRecord } from '../types.js';
import type { CallProblem } from './call-checks.js';
import type { ArgumentIssue } from '../kit/validation/validate-arguments.js';

export const CORRECTIVE_RETRY_POLICY = 'corrective-retry';

type P = typeof CORRECTIVE_RETRY_POLICY;

/**
 * Why leaked call text was not read, as a metric label (a closed set: a leak's own reason may
 * name the tool the model invented): `too-long` (past the held-text cap), `undeclared-tool`,
 * `not-an-object` (arguments), `draft` (a call before a bare `</think>`), `rejected` (another
 * refusal), `unreadable` (the envelope did not parse).
 */
export type LeakReaskCause =
  | 'too-long'
  | 'undeclared-tool'
  | 'not-an-object'
  | 'draft'
  | 'rejected'
  | 'unreadable';

export function leakReaskCause(outcome: string, reason: string | undefined): LeakReaskCause {
  const r = reason ?? '';
  if (r === 'too-long') return 'too-long';
  if (r.startsWith('undeclared tool')) return 'undeclared-tool';
  if (r === 'arguments are not a JSON object') return 'not-an-object';
  if (r.startsWith('draft')) return 'draft';
  return outcome === 'rejected' ? 'rejected' : 'unreadable';
}

export type RetryReason = CallProblem | 'unparsed-leak' | 'prose-when-required' | 'prose-not-in-schema';

/** One bad call, unparsed leak or prose turn (`tool`: `(prose)`, `(unparsed)` for those two). */
export type ValidationFailure =
  | { tool: string; reason: 'prose-when-required' | 'prose-not-in-schema'; message: string }
  | { tool: string; reason: CallProblem; message: string; issues: ArgumentIssue[] }
  | { tool: string; reason: 'unparsed-leak'; format: string; leakReason: string | undefined };

export type CorrectiveRetryEffect =
  | { policy: P; kind: 'validation-failed'; count: number; detail: ValidationFailure }
  /** A call whose schema could not be fully enforced (`cause`: a metric label). */
  | {
      policy: P;
      kind: 'schema-unenforced';
      count: number;
      detail: { tool: string; reasons: string[]; cause: string };
    }
  /**
   * A retry was asked for: the first reason, and all of them; `leak`: the first leak of the turn
   * toolproof could not read (unrecovered, else rejected), so it re-asks instead of reading.
   */
  | {
      policy: P;
      kind: 'retry';
      count: number;
      detail: {
        reason: RetryReason;
        reasons: RetryReason[];
        leak?: { format: string; cause: LeakReaskCause };
      };
    }
  /** Invalid, but no retry: retries spent, or cut off by max_tokens. */
  | {
      policy: P;
      kind: 'returned-invalid';
      count: number;
      detail: { reasons: RetryReason[]; retriesUsed: number; cutOff: boolean };
    }
  /** A retried attempt came back valid. */
  | { policy: P; kind: 'retry-outcome'; count: number; detail: { outcome: 'fixed' } }
  /** An answer past maxHeldBytes is not judged. */
  | { policy: P; kind: 'not-judged'; count: number; detail: { reason: 'too-long'; limit: number } };

/**
 * What an effect means. Read tolerantly, as the record it lands in is the log line's: a
 * hand-built effect with fields missing still reads, with the same defaults as always.
 */
export function describeCorrectiveRetryEffect(effect: CorrectiveRetryEffect): EffectRecord | undefined {
  switch (effect.kind) {
    case 'validation-failed': {
      const d: Partial<ValidationFailure> | undefined = effect.detail;
      return {
        type: 'validation-failed',
        tool: String(d?.tool ?? 'unknown'),
        undeclared: d?.reason === 'undeclared-tool',
        detail: effect.detail,
      };
    }
    case 'schema-unenforced': {
      const d: Partial<typeof effect.detail> | undefined = effect.detail;
      return {
        type: 'schema-unenforced',
        tool: String(d?.tool ?? ''),
        reasons: Array.isArray(d?.reasons) ? d.reasons.map(String) : [],
        cause: String(d?.cause),
      };
    }
    case 'retry': {
      const leak = effect.detail?.leak;
      return {
        type: 'retry',
        reason: String(effect.detail?.reason ?? 'invalid'),
        ...(leak ? { leak: { format: String(leak.format), cause: String(leak.cause) } } : {}),
      };
    }
    default:
      return undefined;
  }
}
