/** audio-decode's effects: audio clips the backend could not decode, each replaced by a note. */
import type { EffectRecord } from '../types.js';

export const AUDIO_DECODE_POLICY = 'audio-decode';

export type AudioDecodeKind = 'audio-undecodable';

/** How many clips a note's effect names (the rest are counted): the reason stays one short line. */
export const NAMED_CLIPS = 4;

/** `count` clips went as notes; `clips`: the first NAMED_CLIPS of them as their notes name them. */
export interface AudioDecodeEffect {
  policy: typeof AUDIO_DECODE_POLICY;
  kind: AudioDecodeKind;
  count: number;
  clips: string[];
}

/**
 * Degraded content: the trace's `degraded` and toolproof_degraded_content_total, and in words
 * "1 audio clip (ogg, 14 KB) the backend could not decode went as a note".
 */
export function describeAudioDecodeEffect(effect: AudioDecodeEffect): EffectRecord {
  const { count, clips } = effect;
  const named = clips.join('; ') + (count > clips.length ? '; …' : '');
  const reason =
    count === 1
      ? `1 audio clip (${named}) the backend could not decode went as a note`
      : `${count} audio clips (${named}) the backend could not decode went as notes`;
  return { type: 'degraded', kind: effect.kind, count, reason };
}
