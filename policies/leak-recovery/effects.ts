/** leak-recovery's effects: one `leak` per leak found, with its record, and what that means. */
import type { LeakRecord } from '../../parsers/types.js';
import type { EffectRecord } from '../types.js';

export const LEAK_RECOVERY_POLICY = 'leak-recovery';

/**
 * Leak outcome for tool_choice "none" (the metric label `outcome` gains this value). Kept here,
 * not in parsers/types.ts: the engine never suppresses, only this policy does.
 */
export const SUPPRESSED = 'suppressed' as const;

/** A leak record as reported: the engine's outcomes plus this policy's 'suppressed'. */
export type ReportedLeak = Omit<LeakRecord, 'outcome'> & {
  outcome: LeakRecord['outcome'] | typeof SUPPRESSED;
};

export type LeakRecoveryEffect = { policy: typeof LEAK_RECOVERY_POLICY; kind: 'leak'; detail: ReportedLeak };

export const leakEffects = (leaks: readonly ReportedLeak[]): LeakRecoveryEffect[] =>
  leaks.map((leak) => ({ policy: LEAK_RECOVERY_POLICY, kind: 'leak', detail: leak }));

/**
 * A leak the client's tool_choice "none" keeps as text: counted, never a call, never a retry
 * (corrective-retry only acts on 'unrecovered'). A 'rejected' leak stays text anyway and keeps
 * its outcome.
 */
export const suppressedEffects = (leaks: readonly LeakRecord[]): LeakRecoveryEffect[] =>
  leakEffects(leaks.map((l) => (l.outcome === 'rejected' ? l : { ...l, outcome: SUPPRESSED })));

/** A leak: the trace's `leaks` and toolproof_leaks_total (a hand-built one without its record: nothing). */
export function describeLeakEffect(effect: LeakRecoveryEffect): EffectRecord | undefined {
  const d: unknown = effect.detail;
  return typeof d === 'object' && d !== null && typeof effect.detail.format === 'string'
    ? { type: 'leak', leak: effect.detail }
    : undefined;
}
