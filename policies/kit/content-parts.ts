/**
 * Rewriting content parts across a history, copy on write: the request policies that degrade
 * content (documents, images) map each part of every message's content array and get back the
 * same array when nothing changed (so an unchanged request stays the client's bytes). And
 * reading them: each distinct value the parts carry (an image's URL, a clip's data).
 */
import type { ChatCompletionRequest, ChatMessage, ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { StringSet } from '../../protocol/string-set.js';

/**
 * The values `read` takes from the request's content parts, in order, each once, long ones
 * told apart by digest (StringSet: a plain Set of 20 KB data URLs differing at their ends
 * compares each with every other, redteam16).
 */
export function partValues(
  request: ChatCompletionRequest,
  read: (part: Record<string, unknown>) => string | undefined,
): string[] {
  const out = new StringSet();
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return [];
  for (const m of messages) {
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const p of content) {
      if (!isObject(p)) continue;
      const value = read(p);
      if (value !== undefined) out.add(value);
    }
  }
  return [...out];
}

/**
 * The parts whose value a backend refused, one value at a time (image-decode, image-urls,
 * audio-decode), as notes: `read` gives a part's value where the part is the policy's, and a
 * part whose value is in `gone` becomes the text `note` makes of it (a function of the part
 * alone: the same bytes every turn, docs/prefix.md). Undefined when none did; else the messages,
 * how many went, and the labels (`label`) of the first `named`.
 */
export function refusedPartsAsNotes(
  request: ChatCompletionRequest,
  gone: ReadonlySet<string> | undefined,
  read: (part: ContentPart) => string | undefined,
  note: (part: ContentPart, value: string) => string,
  labels?: { named: number; label: (part: ContentPart, value: string) => string },
): { messages: ChatMessage[]; count: number; labels: string[] } | undefined {
  if (!gone || gone.size === 0 || !Array.isArray(request.messages)) return undefined;
  let count = 0;
  const named: string[] = [];
  const messages = rewriteParts(request.messages, (part) => {
    const value = read(part);
    if (value === undefined || !gone.has(value)) return part;
    count++;
    if (labels && named.length < labels.named) named.push(labels.label(part, value));
    return { type: 'text', text: note(part, value) };
  });
  return messages && count > 0 ? { messages, count, labels: named } : undefined;
}

/** What a part becomes: itself (unchanged), or one or more parts in its place. */
export type PartRewrite = (
  part: ContentPart,
  message: ChatMessage,
  /** The message's place in the history. */
  index: number,
) => ContentPart | ContentPart[];

/**
 * `messages` with every content part passed through `rewrite`. A message whose parts all come
 * out as text and changed gets its parts joined into one string (blank line between them), the
 * shape the front doors give a text-only content; unchanged messages are the same objects.
 */
export function rewriteParts(
  messages: readonly ChatMessage[],
  rewrite: PartRewrite,
): ChatMessage[] | undefined {
  let out: ChatMessage[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (!Array.isArray(m?.content)) continue;
    let parts: ContentPart[] | undefined;
    const content = m.content;
    for (let j = 0; j < content.length; j++) {
      const part = content[j]!;
      const next = part !== null && typeof part === 'object' ? rewrite(part, m, i) : part;
      if (next === part) {
        parts?.push(part);
        continue;
      }
      parts ??= content.slice(0, j);
      if (Array.isArray(next)) for (const p of next) parts.push(p);
      else parts.push(next);
    }
    if (!parts) continue;
    out ??= messages.slice();
    const allText = parts.every((p) => p.type === 'text' && typeof p.text === 'string');
    out[i] = { ...m, content: allText ? parts.map((p) => p.text).join('\n\n') : parts };
  }
  return out;
}
