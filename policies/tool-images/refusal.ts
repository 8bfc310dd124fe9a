/**
 * A backend's refusal of an image in a tool message, read from the error body. Pure.
 *
 * vLLM loads every image of the request (mm_items, in message order) and then looks, in the prompt
 * the model's chat template rendered, for each image's placeholder. A template that renders no
 * image of a `tool` message (Gemma 4's before its tool template, vllm-project/vllm#41452; GLM-4.xV
 * under the openai content format) leaves that image without one, and the multimodal processor's
 * assertion is a 500, `{"error": {"message": "Failed to apply prompt replacement for
 * mm_items['image'][0]", "type": "InternalServerError", ...}}` (vllm/multimodal/processing). An
 * agent's screenshot tool (Claude Code's, computer use, a browser agent's) returns its image in a
 * tool result, and the agent sends it again on every later turn: each was that 500.
 * Only that message counts, and only when the image it names (its index among the request's
 * images) is in a tool message: a template that renders no image at all is another matter.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { imageUrl } from '../kit/image-part.js';
import { errorMessageHead } from '../kit/error-text.js';

const SIGNATURE = /\bFailed to apply prompt replacement for mm_items\['image'\]\[(\d{1,6})\]/;

/** Whether the image at `index` (among the request's image parts, in message order) is in a tool message. */
export function toolMessageImageAt(request: ChatCompletionRequest, index: number): boolean {
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return false;
  let k = 0;
  for (const m of messages) {
    if (!isObject(m) || !Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (!isObject(p) || imageUrl(p as never) === undefined) continue;
      if (k === index) return m.role === 'tool';
      k++;
    }
  }
  return false;
}

/** Did the backend refuse `sent` because its template renders no image of a tool message? */
export function refusedToolImages(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if (status < 400) return false;
  const match = SIGNATURE.exec(errorMessageHead(body, 1000));
  return match !== null && toolMessageImageAt(sent, Number(match[1]));
}
