/** image-decode's effects: inline images the backend could not decode, each replaced by a note. */
import type { EffectRecord } from '../types.js';

export const IMAGE_DECODE_POLICY = 'image-decode';

export type ImageDecodeKind = 'image-undecodable';

/** How many images a note's effect names (the rest are counted): the reason stays one short line. */
export const NAMED_IMAGES = 4;

/** `count` images went as notes; `images`: the first NAMED_IMAGES of them as their notes name them. */
export interface ImageDecodeEffect {
  policy: typeof IMAGE_DECODE_POLICY;
  kind: ImageDecodeKind;
  count: number;
  images: string[];
}

/**
 * Degraded content: the trace's `degraded` and toolproof_degraded_content_total, and in words
 * "2 images (image/webp, 14 KB; image/webp, 3 KB) the backend could not decode went as notes".
 */
export function describeImageDecodeEffect(effect: ImageDecodeEffect): EffectRecord {
  const { count, images } = effect;
  const named = images.join('; ') + (count > images.length ? '; …' : '');
  const reason =
    count === 1
      ? `1 image (${named}) the backend could not decode went as a note`
      : `${count} images (${named}) the backend could not decode went as notes`;
  return { type: 'degraded', kind: effect.kind, count, reason };
}
