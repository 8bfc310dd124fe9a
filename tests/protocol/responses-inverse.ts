/**
 * Chat messages -> Responses input items, the inverse of protocol/responses/items.ts's
 * inputToMessages: the oracle of the round-trip property in responses.test.ts (toolproof itself
 * never translates chat history back into Responses items).
 */
import type { ChatMessage } from '../../protocol/openai.js';
import type { InputContent, InputItem, MessageItem } from '../../protocol/responses/types.js';

/** Chat content back to Responses parts (the inverse of toChatContent). */
function fromChatContent(content: ChatMessage['content']): string | InputContent[] {
  if (typeof content === 'string' || content == null) return content ?? '';
  return content.map((p): InputContent => {
    if (p.type === 'image_url') {
      const img = p.image_url as { url: string; detail?: string };
      return { type: 'input_image', image_url: img.url, ...(img.detail ? { detail: img.detail } : {}) };
    }
    return { type: 'input_text', text: p.text ?? '' };
  });
}

/**
 * Chat messages -> Responses input items: the inverse of inputToMessages (system messages
 * become system messages, not `instructions`). Item ids are not kept: chat has none.
 */
export function messagesToInput(messages: readonly ChatMessage[]): InputItem[] {
  const items: InputItem[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') {
      if (typeof m.reasoning_content === 'string' && m.reasoning_content)
        items.push({
          type: 'reasoning',
          id: '',
          summary: [],
          content: [{ type: 'reasoning_text', text: m.reasoning_content }],
        });
      const text =
        typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('');
      if (text || !m.tool_calls?.length)
        items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const tc of m.tool_calls ?? [])
        items.push({
          type: 'function_call',
          call_id: tc.id,
          name: tc.function.name,
          arguments: tc.function.arguments,
        });
    } else if (m.role === 'tool') {
      const out = fromChatContent(m.content ?? '');
      items.push({ type: 'function_call_output', call_id: m.tool_call_id ?? '', output: out });
    } else {
      items.push({
        type: 'message',
        role: m.role as MessageItem['role'],
        content: fromChatContent(m.content ?? ''),
      });
    }
  }
  return items;
}
