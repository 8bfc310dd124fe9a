/**
 * A backend's refusal of an audio part because its model cannot take audio, read from the error
 * body. Pure. The images policy's twin (policies/images/refusal.ts): toolproof cannot know
 * beforehand (vLLM does not say which modalities a model takes), and the agent sends the audio
 * again on every later turn, so a refusal relayed as it is ends the session.
 *
 * Only these messages count, never a status alone:
 * - llama-server without an audio --mmproj (tools/server/utils.hpp): "audio input is not
 *   supported - hint: if this is unexpected, you may need to provide the mmproj" (500);
 * - vLLM, a text-only model (vllm/entrypoints/chat_utils.py): "<model> is not a multimodal model";
 * - vLLM, a model without audio (or `--limit-mm-per-prompt audio=0`): "At most 0 audio(s) may be
 *   provided in one prompt."
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { carriesPart, refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [
  /\baudio input is not supported\b/i,
  /\bis not a multimodal model\b/i,
  /\bat most 0 audio\(s\) may be provided\b/i,
];

/** llama-server takes no `audio_url` (vLLM's), whatever its mmproj: its 400 for a type it does not know. */
const UNKNOWN_TYPE: readonly RegExp[] = [/\bunsupported content\[\]\.type\b/i];
const URL_PARTS: ReadonlySet<string> = new Set(['audio_url']);

const PARTS: ReadonlySet<string> = new Set(['input_audio', 'audio_url']);

/** Did the backend refuse the request because its model cannot take audio? */
export function refusesAudio(status: number, body: unknown): boolean {
  return refusalSays(SIGNATURES, status, body);
}

/** Does some message of the request carry an audio part (chat `input_audio`, as the doors send it)? */
export function carriesAudio(request: ChatCompletionRequest): boolean {
  return carriesPart(request, PARTS);
}

/** Did the backend refuse `sent` for its audio: a model without audio, or a part type it does not know? */
export function refusedAudio(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if (refusesAudio(status, body)) return carriesAudio(sent);
  return refusalSays(UNKNOWN_TYPE, status, body) && carriesPart(sent, URL_PARTS);
}
