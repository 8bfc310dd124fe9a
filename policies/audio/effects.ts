/** audio's effects: audio left out for a model that cannot take it, each replaced by a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const AUDIO_POLICY = 'audio';

export type AudioKind = 'audio-note';

export type AudioEffect = TallyEffect<typeof AUDIO_POLICY, AudioKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeAudioEffect(effect: AudioEffect): EffectRecord {
  const { kind, count } = effect;
  const went = count === 1 ? '1 audio clip went as a note' : `${count} audio clips went as notes`;
  return { type: 'degraded', kind, count, reason: `${went}: the model cannot take audio` };
}
