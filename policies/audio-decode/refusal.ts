/**
 * A backend's refusal of a request because it could not decode an audio clip, read from the
 * error body, and which clips of the request it refused. Pure.
 *
 * llama-server with an audio projector (tools/server/server-common.cpp, process_mtmd_prompt)
 * loads every image and clip of the prompt through mtmd_helper_bitmap_init_from_buf and, for one
 * it cannot load, refuses the whole request with "Failed to load image or audio file" (400
 * invalid_request_error), naming nothing: the same words as for an image (policies/image-decode/).
 * A clip fails when its bytes are no WAV, MP3 or FLAC (an Ogg or WebM voice note labelled `wav`,
 * as browsers and phones record them) or when miniaudio cannot decode them. The agent sends that
 * clip again on every later turn: relayed, the refusal ends the session.
 * Which clips: those whose first bytes are no audio llama-server decodes (kit/audio-part.ts);
 * where every one looks readable, all of them when no image is left in the request (an image that
 * cannot be read is image-decode's, which runs first and notes the request's inline images).
 *
 * Not read here: a `format` other than `wav` or `mp3` ("input_audio.format must be either 'wav'
 * or 'mp3'", llama-server's 400). The OpenAI API takes those two formats only: such a request is
 * the client's error, relayed as it is.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { inlineAudio, unreadableAudio } from '../kit/audio-part.js';
import { imageUrlsWhere } from '../kit/image-part.js';
import { refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [/\bFailed to load image or audio file\b/];

/**
 * The clips of `sent` the error says could not be decoded: those that look unreadable, else all
 * of them where no image could be the one; none when it is no loading failure.
 */
export function undecodedAudio(status: number, body: unknown, sent: ChatCompletionRequest): string[] {
  if (!refusalSays(SIGNATURES, status, body)) return [];
  const clips = inlineAudio(sent);
  if (clips.length === 0) return [];
  const unreadable = clips.filter(unreadableAudio);
  if (unreadable.length > 0) return unreadable;
  return imageUrlsWhere(sent, () => true).length > 0 ? [] : clips;
}
