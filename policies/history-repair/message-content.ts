/** Helpers over ChatMessage content, which may be a string, an array of parts, null or absent. */
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';

/** The text a message carries: text parts joined by newlines; other parts as JSON (never dropped). */
export function contentText(content: ChatMessage['content'] | unknown): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) => {
        if (typeof part === 'string') return part;
        const p = part as ContentPart;
        return typeof p?.text === 'string' ? p.text : JSON.stringify(part);
      })
      .join('\n');
  }
  return JSON.stringify(content);
}

function toParts(content: ChatMessage['content']): ContentPart[] {
  if (content === undefined || content === null || content === '') return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return [...content];
}

/** Joins two contents, keeping arrays as arrays (images survive a merge). */
export function joinContent(
  a: ChatMessage['content'],
  b: ChatMessage['content'],
  separator = '\n\n',
): ChatMessage['content'] {
  const aEmpty = a === undefined || a === null || a === '';
  const bEmpty = b === undefined || b === null || b === '';
  if (aEmpty) return b ?? a;
  if (bEmpty) return a;
  if (typeof a === 'string' && typeof b === 'string') return a + separator + b;
  return [...toParts(a), ...toParts(b)];
}

/** Puts `note` in front of a message content, whatever its shape. */
export function prefixContent(note: string, content: ChatMessage['content']): ChatMessage['content'] {
  if (content === undefined || content === null || content === '') return note;
  if (typeof content === 'string') return `${note}\n${content}`;
  return [{ type: 'text', text: note }, ...content];
}
