/**
 * A prompt's size in UTF-8 bytes, estimated without serializing it: the tools, then each message's
 * text and a fixed overhead, in order, so a message's position is a function of what precedes it
 * (tool-result-cap/overflow.ts places its boundary by it). Past CERTAIN_BYTES_PER_TOKEN a token of
 * the window, a prompt is over the window whatever its tokenizer: the policies that shorten a
 * prompt over its window (tool-result-cap, documents) cut it ahead of the backend's refusal.
 */
import type { ChatMessage } from '../../protocol/openai.js';

/** What each message costs beside its text (role, the template's markers), in bytes. */
export const MESSAGE_OVERHEAD = 12;
/**
 * What each tool call costs beside its id, name and arguments, in bytes: the template's wrapping
 * of the call and of its result (Qwen's ChatML: `<tool_call>\n{"name": "…", "arguments": …}\n
 * </tool_call>` and `<tool_response>\n…\n</tool_response>`, ~14 tokens of the ~22 a short call
 * costs there). Without it, an agent's 20 parallel ~110-character reads a turn were estimated at
 * ~40% of what the backend counted, and the boundary of a refused prompt (kit/overflow.ts) cut
 * nothing.
 */
export const CALL_OVERHEAD = 42;
/** UTF-8 bytes a token, for the prompt as a whole (as kit/cut.ts counts printable ASCII). */
export const BYTES_PER_TOKEN = 3;

/**
 * Bytes a token no tokenizer reaches over a whole prompt of real text: past this many bytes a
 * token of the window, the prompt is over it whatever its tokenizer.
 */
export const CERTAIN_BYTES_PER_TOKEN = 6;

/**
 * `text`'s UTF-8 bytes. Counted natively: this runs over the whole prompt of every request of a
 * model whose window is known (kit/cut.ts's per-character estimate took ~440 µs for 150 KB, this
 * ~25 µs). A NUL costs a third of a token here, a whole one in kit/cut.ts: a dense result over the
 * window is cut by itself (tool-result-cap/index.ts) before this counts it.
 */
const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * What an image costs on a multimodal backend, in tokens, for placing messages in a prompt the
 * backend refused for its length (kit/overflow.ts): llama-server's mtmd and vLLM turn each image
 * into a model-dependent number of tokens (Gemma 3: 256 a picture; LLaVA 1.5: 576; Qwen2.5-VL: a
 * 28-pixel patch pair a token, ~1,200 for a 1280x720 screenshot). Toolproof never decodes an
 * image to count its pixels, so each counts this much; never in the "certainly over" test (an
 * image may cost far less).
 */
export const IMAGE_TOKENS = 1024;

const IMAGE_PARTS: ReadonlySet<string> = new Set(['image_url', 'input_image']);

/** `m`'s image parts (each IMAGE_TOKENS on a multimodal backend). */
export function messageImages(m: ChatMessage): number {
  let n = 0;
  if (Array.isArray(m.content)) for (const p of m.content) if (p && IMAGE_PARTS.has(p.type)) n++;
  return n;
}

/**
 * Whether the estimate counts every part of `m`'s content: text and images. An audio, video or
 * file part costs the backend its own tokens (a minute of speech ~1,500 on Qwen2-Audio) and the
 * estimate nothing.
 */
export function messageCounted(m: ChatMessage): boolean {
  if (!Array.isArray(m.content)) return true;
  for (const p of m.content) if (p && p.type !== 'text' && !IMAGE_PARTS.has(p.type)) return false;
  return true;
}

/**
 * `m`'s bytes of text and the overhead, its calls' ids and wrapping included (images and audio are
 * not counted: messageImages).
 */
export function messageBytes(m: ChatMessage): number {
  let n = MESSAGE_OVERHEAD;
  const content = m.content;
  if (typeof content === 'string') n += bytes(content);
  else if (Array.isArray(content))
    for (const p of content) if (p?.type === 'text' && typeof p.text === 'string') n += bytes(p.text);
  if (typeof m.reasoning_content === 'string') n += bytes(m.reasoning_content);
  // A result's call id and name (templates that render them; a JSON-counting backend counts them).
  if (typeof m.tool_call_id === 'string') n += bytes(m.tool_call_id);
  if (typeof m.name === 'string') n += bytes(m.name);
  if (Array.isArray(m.tool_calls))
    for (const c of m.tool_calls) {
      n += CALL_OVERHEAD;
      if (typeof c?.id === 'string') n += bytes(c.id);
      const f = c?.function;
      if (typeof f?.name === 'string') n += bytes(f.name);
      if (typeof f?.arguments === 'string') n += bytes(f.arguments);
    }
  return n;
}

/**
 * About the bytes of `value` as JSON, without serializing it (the tools of an agent are tens of
 * kilobytes on every request): strings by their bytes, keys by their length, 2 bytes of
 * punctuation a value.
 * Walked with a stack of its own, however deep the client nested it.
 */
export function jsonBytes(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    n += 2;
    if (typeof v === 'string') n += bytes(v);
    else if (typeof v === 'number' || typeof v === 'boolean') n += 4;
    else if (Array.isArray(v)) for (const e of v) stack.push(e);
    else if (v !== null && typeof v === 'object')
      for (const k of Object.keys(v)) {
        n += k.length; // keys are names: counted by their UTF-16 units, cheaper than their bytes
        stack.push((v as Record<string, unknown>)[k]);
      }
  }
  return n;
}

/**
 * The estimate of a whole prompt in tokens: its tools and messages at BYTES_PER_TOKEN, each image
 * IMAGE_TOKENS (as kit/overflow.ts places its boundary). Compared with the tokens a backend's
 * refusal reported for that prompt (kit/overflow.ts calibrationScale).
 */
export function estimatedPromptTokens(tools: unknown, messages: readonly ChatMessage[]): number {
  let n = tools === undefined ? 0 : jsonBytes(tools);
  for (const m of messages) if (m) n += messageBytes(m) + messageImages(m) * IMAGE_TOKENS * BYTES_PER_TOKEN;
  return n / BYTES_PER_TOKEN;
}
