/** video's effects: video left out for a model that cannot take it, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const VIDEO_POLICY = 'video';

export type VideoKind = 'video-note';

export type VideoEffect = TallyEffect<typeof VIDEO_POLICY, VideoKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeVideoEffect(effect: VideoEffect): EffectRecord {
  const { kind, count } = effect;
  const went = count === 1 ? '1 video went as a note' : `${count} videos went as notes`;
  return { type: 'degraded', kind, count, reason: `${went}: the model cannot take video` };
}
