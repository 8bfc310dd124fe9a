/** image-urls' effects: images whose URL the backend could not fetch, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGE_URLS_POLICY = 'image-urls';

export type ImageUrlsKind = 'image-unfetched';

export type ImageUrlsEffect = TallyEffect<typeof IMAGE_URLS_POLICY, ImageUrlsKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImageUrlsEffect(effect: ImageUrlsEffect): EffectRecord {
  const { kind, count } = effect;
  const went = count === 1 ? '1 image went as a note' : `${count} images went as notes`;
  return {
    type: 'degraded',
    kind,
    count,
    reason: `${went}: the backend could not fetch ${count === 1 ? 'its URL' : 'their URLs'}`,
  };
}
