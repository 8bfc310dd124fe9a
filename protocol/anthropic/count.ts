/**
 * count_tokens helpers. Pure. The route asks the upstream's /tokenize first (vLLM counts the
 * chat-templated conversation exactly; llama-server counts the text it is given); when no
 * tokenizer answers, the documented estimate is used: one token per 4 characters of text
 * (message text, reasoning, tool-call arguments and the tool definitions' JSON) plus a flat
 * 1,000 tokens per image. Never exact, never a failure.
 */
import type { ChatCompletionRequest, ContentPart } from '../openai.js';

const CHARS_PER_TOKEN = 4;
const TOKENS_PER_IMAGE = 1000;

function partsText(content: string | ContentPart[] | null | undefined): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  let text = '';
  let images = 0;
  for (const p of content ?? []) {
    if (p.type === 'text' && typeof p.text === 'string') text += `${p.text}\n`;
    else images++;
  }
  return { text, images };
}

/** The conversation's text, one message per line block (what llama-server's /tokenize counts). */
export function conversationText(req: ChatCompletionRequest): { text: string; images: number } {
  let text = '';
  let images = 0;
  for (const m of req.messages) {
    const c = partsText(m.content);
    text += `${m.role}\n${c.text}\n`;
    images += c.images;
    if (typeof m.reasoning_content === 'string') text += `${m.reasoning_content}\n`;
    for (const tc of m.tool_calls ?? []) text += `${tc.function.name} ${tc.function.arguments}\n`;
  }
  if (req.tools && req.tools.length > 0) text += JSON.stringify(req.tools);
  return { text, images };
}

export function estimateTokens(req: ChatCompletionRequest): number {
  const { text, images } = conversationText(req);
  return Math.ceil(text.length / CHARS_PER_TOKEN) + images * TOKENS_PER_IMAGE;
}

/**
 * A /tokenize answer's count. The chat form is vLLM's: only its {count} is trusted (llama-server
 * answers that body with {"tokens":[]}, having found no "content"). The text form takes
 * llama-server's {tokens:[...]}.
 */
export function tokenizeCount(body: unknown, form: 'chat' | 'text'): number | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const o = body as { count?: unknown; tokens?: unknown };
  if (typeof o.count === 'number' && Number.isFinite(o.count) && o.count >= 0) return o.count;
  if (form === 'text' && Array.isArray(o.tokens)) return o.tokens.length;
  return undefined;
}
