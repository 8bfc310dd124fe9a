/**
 * Shapes of OpenAI's chat API that chat backends do not take, in a client's history, made
 * into ones they do, with the same words:
 * - an assistant message's `refusal` content parts (`{type: "refusal", refusal}`, beside text
 *   parts in an assistant turn sent back) as text parts. llama-server's parser takes only text,
 *   image_url and input_audio parts and answers any other with its 400 "unsupported
 *   content[].type"; vLLM reads a refusal part as its text.
 * - a `developer` message (OpenAI's name for the system prompt of newer models) as a `system`
 *   message, as the Responses door maps it: chat templates know system, and either raise on a
 *   role they do not know (Mistral's, Gemma's) or leave the message out of the prompt (Qwen's).
 * - the deprecated function-calling shape (`function_call` on an assistant message, answered by a
 *   `{role: "function", name, content}` message; older SDK users still send it): the call as a
 *   `tool_calls` entry whose id is made from the message's place (`call_fn<index>`, the same on
 *   every turn: a conversation only grows), and each function message as a `tool` message
 *   answering the latest call before it of its name not yet answered. Templates render no
 *   "function" role (llama-server's Jinja raises, and its 500 or vLLM's 400 came back on every
 *   turn). A function message no call is left for goes as a tool message that answers nothing:
 *   history repair makes it the note it makes of any orphan result.
 * - a Responses-shaped text part (`input_text`, `output_text`: clients that build chat bodies from
 *   Responses items, or mix the two) as a `text` part with the same text. vLLM reads both as
 *   text; llama-server's parser answers either with its 400 "unsupported content[].type".
 * - an Anthropic-shaped image block (`{type: "image", source: {type: "base64", media_type, data}}`
 *   or a `url` source; clients and proxies that pass Messages content to a chat endpoint) as the
 *   `image_url` part Messages' own door makes of it (a data URL, or the URL): both backends answer
 *   `image` with their 400 for a type they do not know, and the images policy can then note it.
 * - an `image_url` part whose `image_url` is the URL string itself (older LangChain and hand-rolled
 *   clients) as `{url}`: llama-server reads `image_url.url` (a string has none: no image, refused)
 *   and vLLM validates the part against OpenAI's object shape (its 400).
 * The agent sends its history again on every later request, so a turn the backend refuses is
 * refused for the rest of the session. Pure, and the same bytes for the same message on every
 * turn (docs/prefix.md).
 */
import { imageSourceUrl } from './anthropic/request.js';
import { isObject } from './is-object.js';
import type { ChatCompletionRequest, ChatMessage, ContentPart } from './openai.js';

function isRefusal(p: unknown): p is { type: 'refusal'; refusal: string } {
  return isObject(p) && p.type === 'refusal' && typeof p.refusal === 'string';
}

/** A Responses text part (`input_text`, `output_text`) that carries its text. */
function isResponsesText(p: unknown): p is { type: string; text: string } {
  return isObject(p) && (p.type === 'input_text' || p.type === 'output_text') && typeof p.text === 'string';
}

/** An Anthropic image block's image as an `image_url` part, or undefined for another part. */
function anthropicImage(p: unknown): ContentPart | undefined {
  if (!isObject(p) || p.type !== 'image') return undefined;
  const url = imageSourceUrl(p.source);
  return url === undefined ? undefined : { type: 'image_url', image_url: { url } };
}

/** An `image_url` part whose image_url is the URL itself (older LangChain, hand-rolled clients). */
function isBareImage(p: unknown): p is { type: 'image_url'; image_url: string } {
  return isObject(p) && p.type === 'image_url' && typeof p.image_url === 'string';
}

/** The message as a backend takes it, or the same object when it already is. */
function forBackend(m: ChatMessage): ChatMessage {
  if (!isObject(m)) return m;
  if (m.role === 'developer') return { ...m, role: 'system' };
  if (!Array.isArray(m.content)) return m;
  const refusals = m.role === 'assistant' && m.content.some(isRefusal);
  const foreign = (p: unknown) => isBareImage(p) || isResponsesText(p) || anthropicImage(p) !== undefined;
  if (!refusals && !m.content.some(foreign)) return m;
  const content = (m.content as unknown[]).map((p) => {
    if (refusals && isRefusal(p)) return { type: 'text', text: p.refusal };
    if (isResponsesText(p)) return { type: 'text', text: p.text };
    const image = anthropicImage(p);
    if (image) return image;
    if (isBareImage(p)) {
      const { image_url: url, ...rest } = p;
      return { ...rest, image_url: { url } };
    }
    return p;
  }) as ContentPart[];
  return { ...m, content };
}

/** A legacy `function_call` of an assistant message (and no tool_calls), else undefined. */
function legacyCall(m: ChatMessage): { name: string; arguments: string } | undefined {
  const c = m.function_call;
  if (m.role !== 'assistant' || !isObject(c) || typeof c.name !== 'string') return undefined;
  if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) return undefined;
  const args = c.arguments;
  return { name: c.name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) };
}

/** The id a legacy call at message `i` goes under (a function of its place: the same every turn). */
const legacyId = (i: number): string => `call_fn${i}`;

/**
 * A legacy function call or result as the tool-calling shape, or the same object. `open`: the
 * calls made so far and not yet answered, by name (each name's latest last).
 */
function fromLegacy(m: ChatMessage, i: number, open: Map<string, string[]>): ChatMessage {
  if (!isObject(m)) return m;
  const call = legacyCall(m);
  if (call) {
    const { function_call: _legacy, ...rest } = m;
    const ids = open.get(call.name) ?? [];
    ids.push(legacyId(i));
    open.set(call.name, ids);
    return {
      ...rest,
      content: m.content ?? null,
      tool_calls: [{ id: legacyId(i), type: 'function', function: call }],
    };
  }
  if (m.role !== 'function') return m;
  const name = typeof m.name === 'string' ? m.name : '';
  const id = open.get(name)?.pop() ?? `call_fn${i}_result`;
  return { ...m, role: 'tool', tool_call_id: id, content: m.content ?? '' };
}

/** The request with its messages as backends take them; undefined when nothing changed (copy on write). */
export function chatForBackends(body: ChatCompletionRequest): ChatCompletionRequest | undefined {
  const messages = body.messages;
  if (!Array.isArray(messages)) return undefined;
  let out: ChatMessage[] | undefined;
  const open = new Map<string, string[]>();
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const next = fromLegacy(forBackend(m), i, open);
    if (next === m) continue;
    out ??= messages.slice();
    out[i] = next;
  }
  return out ? { ...body, messages: out } : undefined;
}
