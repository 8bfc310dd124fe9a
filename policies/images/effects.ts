/** images' effects: images left out for a model that cannot see, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGES_POLICY = 'images';

/** `image-note`: a model that cannot see; `image-overflow-note`: an older image of a prompt over its window. */
export type ImagesKind = 'image-note' | 'image-overflow-note';

export type ImagesEffect = TallyEffect<typeof IMAGES_POLICY, ImagesKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImagesEffect(effect: ImagesEffect): EffectRecord {
  const { kind, count } = effect;
  const went = count === 1 ? '1 image went as a note' : `${count} images went as notes`;
  const reason =
    kind === 'image-note'
      ? `${went}: the model cannot see`
      : `${went}: older messages' images, of a prompt over the model's window`;
  return { type: 'degraded', kind, count, reason };
}
