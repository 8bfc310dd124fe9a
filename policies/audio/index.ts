/**
 * audio (request side): for a model that cannot take audio (`audio: false`, or its backend
 * refused audio: with `audio: auto` remembered for the route's fallbackTtlSeconds), every audio
 * part (chat `input_audio` and vLLM's `audio_url`, and Responses `input_audio`, which the door
 * hands on as one) becomes
 * a one-line note. A text-only backend refuses audio outright (llama-server: "audio input is not
 * supported", a 500; vLLM: not a multimodal model), and the agent would send that audio again on
 * every later turn. The note is a pure function of the part (its format and size), so every turn
 * gets the same bytes. The images policy's twin (policies/images/), with its own fact: a model
 * may see and not hear.
 */
import { base64Size } from '../../protocol/file-part.js';
import type { ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { formatBytes } from '../kit/sizes.js';
import { mediaWhat } from '../kit/media-note.js';
import type { Policy, PolicyContext } from '../types.js';
import { refusedAudio } from './refusal.js';
import { AUDIO_POLICY, type AudioEffect, type AudioKind, describeAudioEffect } from './effects.js';

/** `[audio omitted: <format>, <size>; this model cannot take audio]`. */
export function audioNote(part: ContentPart): string {
  // vLLM's `audio_url` (a URL or a data URL): its media type and size where it carries its bytes.
  if (part.type === 'audio_url') {
    const url = isObject(part.audio_url) ? part.audio_url.url : part.audio_url;
    return `[audio omitted: ${mediaWhat(url, 'audio')}; this model cannot take audio]`;
  }
  const audio = isObject(part.input_audio) ? part.input_audio : {};
  // The format is the client's text: only a short token of its own is named.
  const format =
    typeof audio.format === 'string' && /^[A-Za-z0-9.+-]{1,16}$/.test(audio.format) ? audio.format : 'audio';
  const size = typeof audio.data === 'string' ? formatBytes(base64Size(audio.data)) : '0 B';
  return `[audio omitted: ${format}, ${size}; this model cannot take audio]`;
}

/** The refusal's fact: the upstream refused audio because its model cannot take it. */
const AUDIO_FACT = 'audio';

/**
 * Whether this request's audio goes as notes: the model is configured without audio; or its
 * backend refused this request's audio; or, with `audio: auto` (or a `true` the backend said), an
 * earlier request's within the route's fallbackTtlSeconds (`audio: true` is the operator's word for every request but the one
 * refused).
 */
function deaf(ctx: PolicyContext): boolean {
  const a = ctx.settings.audio;
  if (a === false) return true;
  const refused = ctx.refused;
  if (refused === undefined) return false;
  // `auto`, or a `true` that was the backend's word (ModelSettings.fromBackend), learns
  const learns = a === 'auto' || ctx.settings.fromBackend?.includes('audio') === true;
  return refused.now.has(AUDIO_FACT) || (learns && refused.remembered.has(AUDIO_FACT));
}

export const audioPolicy: Policy<AudioEffect> = {
  name: AUDIO_POLICY,
  settingsSchema: Object.freeze({ audio: { enum: [true, false, 'auto'] } }),
  // On for every model: one toolproof was not told about may still have its audio refused.
  enabled: () => true,
  describeEffect: describeAudioEffect,
  refusal: {
    fact: AUDIO_FACT,
    decision: 'audio-refused',
    refused: (status, body, sent, ctx) => ctx.settings.audio !== false && refusedAudio(status, body, sent),
    describe: (status) =>
      `the upstream refused the audio (status ${status}: its model cannot take it): sent again with a note for each`,
  },
  onRequest(request, ctx) {
    if (!deaf(ctx) || !Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof AUDIO_POLICY, AudioKind>(AUDIO_POLICY);
    const messages = rewriteParts(request.messages, (part) => {
      if (part.type !== 'input_audio' && part.type !== 'audio_url') return part;
      tally.add('audio-note');
      return { type: 'text', text: audioNote(part) };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
