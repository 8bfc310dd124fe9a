/** image-decode's effects: inline images the backend could not decode, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const IMAGE_DECODE_POLICY = 'image-decode';

export type ImageDecodeKind = 'image-undecodable';

export type ImageDecodeEffect = TallyEffect<typeof IMAGE_DECODE_POLICY, ImageDecodeKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeImageDecodeEffect(effect: ImageDecodeEffect): EffectRecord {
  return { type: 'degraded', kind: effect.kind, count: effect.count };
}
