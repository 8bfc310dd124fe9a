/**
 * A backend's "the conversation does not fit" error, read from its body, and the wording each
 * API's clients recover from. Pure.
 *
 * Read (HTTP 400 bodies):
 * - vLLM (entrypoints/openai serving `_validate_input`): "This model's maximum context length is
 *   N tokens. However, you requested T tokens (P in the messages, C in the completion). ...",
 *   "... However, your request has P input tokens. ...", and "'max_tokens' or
 *   'max_completion_tokens' is too large: C. This model's maximum context length is N tokens and
 *   your request has P input tokens (C > N - P)."; later releases (vllm/renderers/params.py, which
 *   tokenizes a prompt no further than one token past its bound): "This model's maximum context
 *   length is N tokens. However, you requested C output tokens and your prompt contains [at least]
 *   P input tokens, for a total of ...", "You passed P input tokens and requested C output tokens.
 *   However, the model's context length is only N tokens, resulting in a maximum input length of
 *   I tokens. ...", "You passed X input characters and requested C output tokens. However, the
 *   model's context length is only N tokens, ..." (no token count), and from the engine, "The
 *   decoder prompt (length P) is longer than the maximum model length of N." (images and audio
 *   counted).
 * - llama-server (tools/server, ERROR_TYPE_EXCEED_CONTEXT_SIZE): type "exceed_context_size_error",
 *   "... exceeds the available context size ...", with n_prompt_tokens and n_ctx beside it.
 *
 * Written:
 * - Messages: Anthropic's own wording. Claude Code compacts the conversation on
 *   /prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)/i and, for the output budget, retries
 *   with a smaller max_tokens on /input length and `max_tokens` exceed context limit:
 *   (\d+) \+ (\d+) > (\d+)/ (both read from the strings of @anthropic-ai/claude-code 2.1.332's
 *   binary, December 2026).
 * - Responses and chat: OpenAI's error code `context_length_exceeded`. Codex maps exactly that
 *   code (error.code of an HTTP error, response.error.code of a response.failed event) to its
 *   context-window-exceeded error and compacts (codex-rs codex-api, classify_provider_error).
 */

export interface ContextOverflow {
  /** The model's context window, in tokens. */
  max: number;
  /** Prompt tokens, when the backend said. */
  prompt?: number;
  /** The completion budget asked for, when the backend said. */
  completion?: number;
  /**
   * `prompt` is a bound, not a count: the backend stopped tokenizing one token past what it could
   * take ("at least P input tokens"; P one past the maximum input length it names). A bound
   * measures no tokenizer (kit/overflow.ts).
   */
  bound?: true;
}

/**
 * A count as the backend spelled it. One past 2^53 (or past any number: Infinity) is held at
 * the largest safe integer, so the message each door writes still carries two numbers
 * (Claude Code's pattern needs both), never NaN or undefined.
 */
const num = (s: string | undefined): number | undefined => {
  if (s === undefined || !/^\d[\d,]*$/.test(s)) return undefined;
  const n = Number(s.replace(/,/g, ''));
  return Number.isNaN(n) ? undefined : Math.min(n, Number.MAX_SAFE_INTEGER);
};

function errorObject(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object') return {};
  const o = body as Record<string, unknown>;
  const inner = o.error;
  return inner && typeof inner === 'object' ? (inner as Record<string, unknown>) : o;
}

/** The overflow an upstream's 400 body reports, or undefined when it reports something else. */
export function parseContextOverflow(body: unknown): ContextOverflow | undefined {
  const err = errorObject(body);
  const message =
    typeof err.message === 'string'
      ? err.message
      : typeof (body as { detail?: unknown } | null)?.detail === 'string'
        ? String((body as { detail: string }).detail)
        : typeof body === 'string'
          ? body
          : '';
  // Only the head is read: these messages are short, a huge body must not cost regex time.
  const text = message.slice(0, 2000);
  if (err.type === 'exceed_context_size_error' || /exceeds the available context size/i.test(text)) {
    const words = /\((\d+) tokens\) exceeds the available context size \((\d+) tokens\)/i.exec(text);
    const max = num(String(err.n_ctx ?? '')) ?? num(words?.[2]);
    if (max === undefined) return undefined;
    const prompt = num(String(err.n_prompt_tokens ?? '')) ?? num(words?.[1]);
    return { max, ...(prompt !== undefined ? { prompt } : {}) };
  }
  const decoder = /prompt \(length (\d[\d,]*)\) is longer than the maximum model length of (\d[\d,]*)/i.exec(
    text,
  );
  if (decoder) return { max: num(decoder[2])!, prompt: num(decoder[1])! };
  const window =
    /maximum context length is (\d[\d,]*) tokens/i.exec(text) ??
    /context length is only (\d[\d,]*) tokens/i.exec(text);
  if (!window) return undefined;
  const max = num(window[1])!;
  const split = /\((\d[\d,]*) in the messages, (\d[\d,]*) in the completion\)/i.exec(text);
  if (split) return { max, prompt: num(split[1]), completion: num(split[2]) };
  const tooLarge = /max_(?:completion_)?tokens'?[^:]*is too large: (\d[\d,]*)/i.exec(text);
  const output = /requested (\d[\d,]*) output tokens/i.exec(text);
  const input = /(?:has|requested|contains|passed) (at least )?(\d[\d,]*) input tokens/i.exec(text);
  const inputBound = /maximum input length of (\d[\d,]*) tokens/i.exec(text);
  const prompt = num(input?.[2]);
  const completion = num(tooLarge?.[1] ?? output?.[1]);
  const bound =
    prompt !== undefined &&
    (input?.[1] !== undefined || (inputBound !== null && prompt === num(inputBound[1])! + 1));
  return {
    max,
    ...(prompt !== undefined ? { prompt } : {}),
    ...(completion !== undefined ? { completion } : {}),
    ...(bound ? { bound: true as const } : {}),
  };
}

/** OpenAI's error code for it (chat and Responses). */
export const CONTEXT_LENGTH_EXCEEDED = 'context_length_exceeded';

/** The prompt alone does not fit (as opposed to prompt + the completion budget). */
function promptTooLong(o: ContextOverflow): boolean {
  return o.completion === undefined || o.prompt === undefined || o.prompt >= o.max;
}

/** OpenAI's wording (chat completions and Responses). */
export function openAIOverflowMessage(o: ContextOverflow): string {
  if (promptTooLong(o))
    return `This model's maximum context length is ${o.max} tokens. However, your messages resulted in ${o.prompt ?? 'more'} tokens. Please reduce the length of the messages.`;
  return `This model's maximum context length is ${o.max} tokens. However, you requested ${o.prompt! + o.completion!} tokens (${o.prompt} in the messages, ${o.completion} in the completion). Please reduce the length of the messages or completion.`;
}

/** Anthropic's wording, which Claude Code reads (see above). */
export function anthropicOverflowMessage(o: ContextOverflow): string {
  if (promptTooLong(o)) {
    // Anthropic's message always carries both numbers; when the backend gave no prompt count,
    // one past the window is the least it can be.
    const prompt = o.prompt !== undefined && o.prompt > o.max ? o.prompt : Math.max(o.prompt ?? 0, o.max + 1);
    return `prompt is too long: ${prompt} tokens > ${o.max} maximum`;
  }
  return `input length and \`max_tokens\` exceed context limit: ${o.prompt} + ${o.completion} > ${o.max}, decrease input length or \`max_tokens\` and try again`;
}
