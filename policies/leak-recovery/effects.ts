/** leak-recovery's effects: one `leak` per leak found, with its record. */
import type { LeakRecord } from '../../parsers/types.js';
import type { EffectLeak, EffectRecord, PolicyEffect } from '../types.js';

export const LEAK_RECOVERY_POLICY = 'leak-recovery';

/**
 * Leak outcome for tool_choice "none" (the metric label `outcome` gains this value). Kept here,
 * not in parsers/types.ts: the engine never suppresses, only this policy does.
 */
export const SUPPRESSED = 'suppressed' as const;

/** A leak record as reported: the engine's outcomes plus this policy's 'suppressed'. */
type ReportedLeak = Omit<LeakRecord, 'outcome'> & { outcome: LeakRecord['outcome'] | typeof SUPPRESSED };

export const leakEffects = (leaks: readonly ReportedLeak[]): PolicyEffect[] =>
  leaks.map((leak) => ({ policy: LEAK_RECOVERY_POLICY, kind: 'leak', detail: leak }));

/**
 * A leak the client's tool_choice "none" keeps as text: counted, never a call, never a retry
 * (corrective-retry only acts on 'unrecovered'). A 'rejected' leak stays text anyway and keeps
 * its outcome.
 */
export const suppressedEffects = (leaks: readonly LeakRecord[]): PolicyEffect[] =>
  leakEffects(leaks.map((l) => (l.outcome === 'rejected' ? l : { ...l, outcome: SUPPRESSED })));

function isLeak(detail: unknown): detail is EffectLeak {
  return !!detail && typeof detail === 'object' && typeof (detail as EffectLeak).format === 'string';
}

export function describeLeakEffect(effect: PolicyEffect): EffectRecord | undefined {
  return isLeak(effect.detail) ? { type: 'leak', leak: effect.detail } : undefined;
}
