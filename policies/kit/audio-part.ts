/**
 * A request's inline audio (chat `input_audio` parts, as the doors hand them on) and whether its
 * bytes begin as audio llama-server decodes. Pure. The image-decode and audio-decode policies
 * share it: llama-server answers an image and an audio clip it could not load with one message,
 * naming neither (policies/audio-decode/refusal.ts), so each tells its own from the bytes.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { partValues } from './content-parts.js';

/** The base64 data of an `input_audio` part, or undefined when it is none or has no data. */
export function audioData(part: unknown): string | undefined {
  if (!isObject(part) || part.type !== 'input_audio' || !isObject(part.input_audio)) return undefined;
  const data = part.input_audio.data;
  return typeof data === 'string' ? data : undefined;
}

/**
 * The request's audio clips (their base64 data), in order, each once (long ones told apart by
 * digest: StringSet). Base64 holds no `:`, so a clip is never taken for an image's URL in
 * PolicyContext.refused.values, which the refusals of values share.
 */
export function inlineAudio(request: ChatCompletionRequest): string[] {
  return partValues(request, audioData);
}

/**
 * Whether a clip's bytes begin as no audio llama-server decodes. Its loader (mtmd-helper's
 * is_audio_file) takes a buffer as audio only when it begins `RIFF....WAVE` (WAV), `ID3` or an
 * MPEG frame sync (MP3), or `fLaC` (FLAC), at least 12 bytes; anything else (Ogg, WebM, M4A, a
 * data URL where base64 belongs) is handed to the image decoder, which fails on it.
 */
export function unreadableAudio(data: string): boolean {
  const head = Buffer.from(data.slice(0, 16), 'base64');
  if (head.length < 12) return true;
  const ascii = (at: number, s: string) => head.toString('latin1', at, at + s.length) === s;
  const wav = ascii(0, 'RIFF') && ascii(8, 'WAVE');
  const mp3 = ascii(0, 'ID3') || (head[0] === 0xff && (head[1]! & 0xe0) === 0xe0);
  return !(wav || mp3 || ascii(0, 'fLaC'));
}
