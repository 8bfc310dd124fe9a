/** image-urls' effects: images whose URL the backend could not fetch, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGE_URLS_POLICY = 'image-urls';

export type ImageUrlsKind = 'image-unfetched';

export type ImageUrlsEffect = TallyEffect<typeof IMAGE_URLS_POLICY, ImageUrlsKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImageUrlsEffect(effect: ImageUrlsEffect): EffectRecord {
  return { type: 'degraded', kind: effect.kind, count: effect.count };
}
