/** images' effects: images left out for a model that cannot see, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGES_POLICY = 'images';

/** `image-note`: a model that cannot see; `image-overflow-note`: an older image of a prompt over its window. */
export type ImagesKind = 'image-note' | 'image-overflow-note';

export type ImagesEffect = TallyEffect<typeof IMAGES_POLICY, ImagesKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImagesEffect(effect: ImagesEffect): EffectRecord {
  return { type: 'degraded', kind: effect.kind, count: effect.count };
}
