/**
 * audio-decode (request side): an audio clip its backend could not decode (an Ogg voice note
 * labelled `wav` on llama-server: refusal.ts) becomes a one-line note, so the agent's later
 * turns, which carry that clip again, are not refused one after another. image-decode's twin:
 * the server sends the refused request once more with the notes and remembers each clip per
 * upstream, model and key (UpstreamRefusal.values; a long clip is kept as its hash), so later
 * turns go with the same notes from the start: the note is a function of the clip alone, the
 * same bytes every turn (docs/prefix.md). Clips the backend decoded go on as they are; a model
 * that cannot take audio at all is the audio policy's (it runs first).
 */
import { base64Size } from '../../protocol/file-part.js';
import type { ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { audioData, inlineAudio } from '../kit/audio-part.js';
import { refusedPartsAsNotes } from '../kit/content-parts.js';
import { formatBytes } from '../kit/sizes.js';
import type { Policy } from '../types.js';
import {
  AUDIO_DECODE_POLICY,
  type AudioDecodeEffect,
  describeAudioDecodeEffect,
  NAMED_CLIPS,
} from './effects.js';
import { undecodedAudio } from './refusal.js';

/** `wav, 31 KB`: the clip's format (a short token of the client's, else `audio`) and size. */
function clipLabel(part: ContentPart, data: string): string {
  const audio = isObject(part.input_audio) ? part.input_audio : {};
  const format =
    typeof audio.format === 'string' && /^[A-Za-z0-9.+-]{1,16}$/.test(audio.format) ? audio.format : 'audio';
  return `${format}, ${formatBytes(base64Size(data))}`;
}

/** `[audio not available: wav, 31 KB; the model server could not decode it]`. */
export function undecodedAudioNote(part: ContentPart): string {
  return `[audio not available: ${clipLabel(part, audioData(part) ?? '')}; the model server could not decode it]`;
}

export const audioDecodePolicy: Policy<AudioDecodeEffect> = {
  name: AUDIO_DECODE_POLICY,
  // On for every model: any backend that hears may meet a clip its decoder does not read.
  enabled: () => true,
  describeEffect: describeAudioDecodeEffect,
  refusal: {
    fact: 'audio-decode',
    decision: 'audio-decode-refused',
    refused: (status, body, sent) => undecodedAudio(status, body, sent).length > 0,
    describe: (status) =>
      `the upstream could not decode an audio clip (status ${status}): sent again with a note for each clip it could not decode`,
    values: { named: undecodedAudio, candidates: inlineAudio },
  },
  onRequest(request, ctx) {
    const notes = refusedPartsAsNotes(request, ctx.refused?.values, audioData, undecodedAudioNote, {
      named: NAMED_CLIPS,
      label: clipLabel,
    });
    if (!notes) return { action: 'continue', request, effects: [] };
    const effect: AudioDecodeEffect = {
      policy: AUDIO_DECODE_POLICY,
      kind: 'audio-undecodable',
      count: notes.count,
      clips: notes.labels,
    };
    return { action: 'continue', request: { ...request, messages: notes.messages }, effects: [effect] };
  },
};
