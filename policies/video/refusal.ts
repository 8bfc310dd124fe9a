/**
 * A backend's refusal of a video part because its model cannot take video, read from the error
 * body. Pure. The audio policy's twin (policies/audio/refusal.ts): vLLM does not say which
 * modalities a model takes, and the agent sends the video again on every later turn, so a refusal
 * relayed as it is ends the session.
 *
 * Only these messages count, never a status alone, and only for a request that carries video:
 * - vLLM, a text-only model (vllm/entrypoints/chat_utils.py): "<model> is not a multimodal model";
 * - vLLM, a model without video (or `--limit-mm-per-prompt video=0`): "At most 0 video(s) may be
 *   provided in one prompt.";
 * - llama-server without a video mmproj (tools/server): "video input is not supported - hint: ...";
 *   and for vLLM's `video_url`, a type its parser does not take: "unsupported content[].type".
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { carriesPart, refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [
  /\bvideo input is not supported\b/i,
  /\bis not a multimodal model\b/i,
  /\bat most 0 video\(s\) may be provided\b/i,
];

/** llama-server's 400 for a type it does not know: vLLM's `video_url`. */
const UNKNOWN_TYPE: readonly RegExp[] = [/\bunsupported content\[\]\.type\b/i];
const URL_PARTS: ReadonlySet<string> = new Set(['video_url']);

/** vLLM's `video_url` and llama-server's `input_video`. */
export const VIDEO_PARTS: ReadonlySet<string> = new Set(['video_url', 'input_video']);

/** Did the backend refuse the request because its model cannot take video? */
export function refusesVideo(status: number, body: unknown): boolean {
  return refusalSays(SIGNATURES, status, body);
}

/** Does some message of the request carry a video part? */
export function carriesVideo(request: ChatCompletionRequest): boolean {
  return carriesPart(request, VIDEO_PARTS);
}

/** Did the backend refuse `sent` for its video: a model without video, or a part type it does not know? */
export function refusedVideo(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if (refusesVideo(status, body)) return carriesVideo(sent);
  return refusalSays(UNKNOWN_TYPE, status, body) && carriesPart(sent, URL_PARTS);
}
