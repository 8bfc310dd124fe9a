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
import { isObject } from '../../protocol/is-object.js';

const SIGNATURES: readonly RegExp[] = [
  /\baudio input is not supported\b/i,
  /\bis not a multimodal model\b/i,
  /\bat most 0 audio\(s\) may be provided\b/i,
];

/** The error's message, wherever the backend put it (OpenAI's error object, vLLM's legacy top level). */
function messageOf(body: unknown): string {
  if (typeof body === 'string') return body;
  if (!isObject(body)) return '';
  const inner = isObject(body.error) ? body.error : body;
  const m = inner.message ?? body.detail;
  return typeof m === 'string' ? m : '';
}

/** Did the backend refuse the request because its model cannot take audio? */
export function refusesAudio(status: number, body: unknown): boolean {
  if (status < 400) return false;
  // Only the head is read: these messages are short, a huge body must not cost regex time.
  const text = messageOf(body).slice(0, 1000);
  return text !== '' && SIGNATURES.some((p) => p.test(text));
}

/** Does some message of the request carry an audio part (chat `input_audio`, as the doors send it)? */
export function carriesAudio(request: ChatCompletionRequest): boolean {
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return false;
  for (const m of messages) {
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const p of content) if (isObject(p) && p.type === 'input_audio') return true;
  }
  return false;
}
