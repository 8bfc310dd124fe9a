/** truncation's effects: the oldest messages left out to fit the model's window, a user turn over it cut. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const TRUNCATION_POLICY = 'truncation';

/** messages-left-out: the oldest messages (truncation: auto, a compaction); turn-cut: a user turn over the window by itself. */
export type TruncationKind = 'messages-left-out' | 'turn-cut';

export type TruncationEffect = TallyEffect<typeof TRUNCATION_POLICY, TruncationKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeTruncationEffect(effect: TruncationEffect): EffectRecord {
  const { kind, count } = effect;
  if (kind === 'turn-cut')
    return {
      type: 'degraded',
      kind,
      count,
      reason: `${count === 1 ? 'a user turn' : `${count} user turns`} longer than the model's context window by itself cut to its head and tail`,
    };
  const what = count === 1 ? 'the oldest message was' : `the ${count} oldest messages were`;
  return {
    type: 'degraded',
    kind,
    count,
    reason: `${what} left out to fit the model's context window (truncation: auto)`,
  };
}
