/** image-limit's effects: the older images past a backend's per-prompt limit, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGE_LIMIT_POLICY = 'image-limit';

export type ImageLimitKind = 'image-limit-note';

export type ImageLimitEffect = TallyEffect<typeof IMAGE_LIMIT_POLICY, ImageLimitKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImageLimitEffect(effect: ImageLimitEffect): EffectRecord {
  return { type: 'degraded', kind: effect.kind, count: effect.count };
}
