/**
 * Two shapes of OpenAI's chat API that chat backends do not take, in a client's history, made
 * into ones they do, with the same words:
 * - an assistant message's `refusal` content parts (`{type: "refusal", refusal}`, beside text
 *   parts in an assistant turn sent back) as text parts. llama-server's parser takes only text,
 *   image_url and input_audio parts and answers any other with its 400 "unsupported
 *   content[].type"; vLLM reads a refusal part as its text.
 * - a `developer` message (OpenAI's name for the system prompt of newer models) as a `system`
 *   message, as the Responses door maps it: chat templates know system, and either raise on a
 *   role they do not know (Mistral's, Gemma's) or leave the message out of the prompt (Qwen's).
 * The agent sends its history again on every later request, so a turn the backend refuses is
 * refused for the rest of the session. Pure, and the same bytes for the same message on every
 * turn (docs/prefix.md).
 */
import { isObject } from './is-object.js';
import type { ChatCompletionRequest, ChatMessage, ContentPart } from './openai.js';

function isRefusal(p: unknown): p is { type: 'refusal'; refusal: string } {
  return isObject(p) && p.type === 'refusal' && typeof p.refusal === 'string';
}

/** The message as a backend takes it, or the same object when it already is. */
function forBackend(m: ChatMessage): ChatMessage {
  if (!isObject(m)) return m;
  if (m.role === 'developer') return { ...m, role: 'system' };
  if (m.role !== 'assistant' || !Array.isArray(m.content) || !m.content.some(isRefusal)) return m;
  const content = (m.content as unknown[]).map((p) =>
    isRefusal(p) ? { type: 'text', text: p.refusal } : p,
  ) as ContentPart[];
  return { ...m, content };
}

/** The request with its messages as backends take them; undefined when nothing changed (copy on write). */
export function chatForBackends(body: ChatCompletionRequest): ChatCompletionRequest | undefined {
  const messages = body.messages;
  if (!Array.isArray(messages)) return undefined;
  let out: ChatMessage[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const next = forBackend(m);
    if (next === m) continue;
    out ??= messages.slice();
    out[i] = next;
  }
  return out ? { ...body, messages: out } : undefined;
}
