/**
 * A backend's refusal of a content part whose type its chat parser does not know, read from the
 * error body. Pure. Only these messages count, never a status alone, and only for a request that
 * carries a part of a type no chat backend's parser is known to take (UNKNOWN):
 * - llama-server (tools/server/server-common.cpp, oaicompat_chat_params_parse): any type besides
 *   text, image_url, input_audio (and input_video in newer builds) is its 400
 *   "unsupported content[].type", which names nothing;
 * - vLLM (vllm/entrypoints/chat_utils.py, _parse_chat_message_content_part): a type outside its
 *   parser map raises NotImplementedError("Unknown part type: <type>"), answered as a 400.
 * Clients send such parts in histories they built themselves: LangChain's `thinking` blocks of a
 * reasoning model's answer, Anthropic-shaped blocks sent to a chat endpoint, a newer API's parts
 * passed through by the Messages and Responses doors. The agent sends them again on every later
 * turn, so the refusal relayed as it is ends the session.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { refusalSays } from '../kit/media-refusal.js';

const SIGNATURES: readonly RegExp[] = [/\bunsupported content\[\]\.type\b/i, /\bUnknown part type\b/i];

/**
 * The part types toolproof knows on the chat side: text, what a backend takes or a policy turns
 * into text when it cannot (image_url, input_audio, audio_url, video_url, input_video, file), and
 * an assistant's refusal (made text for the backend: chat-backend-shapes).
 */
const KNOWN: ReadonlySet<string> = new Set([
  'text',
  'image_url',
  'input_audio',
  'audio_url',
  'video_url',
  'input_video',
  'file',
  'refusal',
]);

/** Is this content part of a type toolproof does not know on the chat side? */
export function isUnknownPart(part: unknown): boolean {
  return isObject(part) && !(typeof part.type === 'string' && KNOWN.has(part.type));
}

/** Does some message of the request carry a part of a type toolproof does not know? */
export function carriesUnknownPart(request: ChatCompletionRequest): boolean {
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return false;
  for (const m of messages) {
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const p of content) if (isUnknownPart(p)) return true;
  }
  return false;
}

/** Did the backend refuse `sent` for a part type its parser does not know? */
export function refusedUnknownPart(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  return refusalSays(SIGNATURES, status, body) && carriesUnknownPart(sent);
}
