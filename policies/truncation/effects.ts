/** truncation's effects: the oldest messages left out to fit the model's window (truncation: auto). */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const TRUNCATION_POLICY = 'truncation';

export type TruncationKind = 'messages-left-out';

export type TruncationEffect = TallyEffect<typeof TRUNCATION_POLICY, TruncationKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeTruncationEffect(effect: TruncationEffect): EffectRecord {
  const { kind, count } = effect;
  const what = count === 1 ? 'the oldest message was' : `the ${count} oldest messages were`;
  return {
    type: 'degraded',
    kind,
    count,
    reason: `${what} left out to fit the model's context window (truncation: auto)`,
  };
}
