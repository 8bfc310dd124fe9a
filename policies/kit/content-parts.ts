/**
 * Rewriting content parts across a history, copy on write: the request policies that degrade
 * content (documents, images) map each part of every message's content array and get back the
 * same array when nothing changed (so an unchanged request stays the client's bytes).
 */
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';

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
