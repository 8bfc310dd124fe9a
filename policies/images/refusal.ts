/**
 * A backend's refusal of an image because its model cannot see, read from the error body. Pure.
 *
 * toolproof cannot always know beforehand: vLLM's /v1/models does not say whether a model takes
 * images (server/capability-probe.ts leaves `vision: auto` as "can see" there), and a llama-server
 * that was down at start-up was never asked. The agent sends the image again on every later turn,
 * so a refusal relayed as it is ends the session; the attempt loop (server/chat/attempt.ts) instead
 * sends the request once more with the images as notes, and remembers the model as text-only.
 *
 * Only these messages count, never a status alone (a 400 about anything else is the client's):
 * - vLLM, a text-only model (vllm/entrypoints/chat_utils.py): "<model> is not a multimodal model"
 *   (400; a Codex session was reported ending on it, every later turn refused);
 * - vLLM with `--limit-mm-per-prompt image=0`: "At most 0 image(s) may be provided in one prompt.";
 * - llama-server without --mmproj (tools/server/utils.hpp): "image input is not supported - hint:
 *   if this is unexpected, you may need to provide the mmproj" (500).
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { carriesPart, refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [
  /\bis not a multimodal model\b/i,
  /\bat most 0 image\(s\) may be provided\b/i,
  /\bimage input is not supported\b/i,
];

const PARTS: ReadonlySet<string> = new Set(['image_url', 'input_image']);

/** Did the backend refuse the request because its model cannot read images? */
export function refusesImages(status: number, body: unknown): boolean {
  return refusalSays(SIGNATURES, status, body);
}

/** Does some message of the request carry an image part (chat `image_url`, as every door sends it)? */
export function carriesImages(request: ChatCompletionRequest): boolean {
  return carriesPart(request, PARTS);
}
