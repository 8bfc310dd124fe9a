/** unknown-parts' effects: content parts of types the backend refused, each as its text or a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const UNKNOWN_PARTS_POLICY = 'unknown-parts';

export type UnknownPartKind = 'part-note';

export type UnknownPartEffect = TallyEffect<typeof UNKNOWN_PARTS_POLICY, UnknownPartKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeUnknownPartEffect(effect: UnknownPartEffect): EffectRecord {
  const { kind, count } = effect;
  const went = count === 1 ? '1 content part went as text' : `${count} content parts went as text`;
  return { type: 'degraded', kind, count, reason: `${went}: the model server does not take their types` };
}
