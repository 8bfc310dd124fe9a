/** image-limit's effects: the older images past a backend's per-prompt limit, each replaced by a note. */
import type { EffectRecord } from '../types.js';

export const IMAGE_LIMIT_POLICY = 'image-limit';

export type ImageLimitKind = 'image-limit-note';

/** The oldest `count` of the request's `of` images went as notes: the backend takes at most `limit`. */
export interface ImageLimitEffect {
  policy: typeof IMAGE_LIMIT_POLICY;
  kind: ImageLimitKind;
  count: number;
  of: number;
  limit: number;
}

/**
 * Degraded content: the trace's `degraded` and toolproof_degraded_content_total, and in words
 * "the 3 oldest of 7 images went as notes: the backend takes at most 4 a prompt".
 */
export function describeImageLimitEffect(effect: ImageLimitEffect): EffectRecord {
  const { count, of, limit } = effect;
  const which =
    count === 1
      ? `the oldest of ${of} images went as a note`
      : `the ${count} oldest of ${of} images went as notes`;
  const reason = `${which}: the backend takes at most ${limit} image${limit === 1 ? '' : 's'} a prompt`;
  return { type: 'degraded', kind: effect.kind, count, reason };
}
