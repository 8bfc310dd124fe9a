/**
 * chat_template_kwargs that make a thinking template keep the reasoning of earlier turns
 * (settings.preserveThinking). Qwen3.6-style templates read `preserve_thinking`, GLM-4.7 and
 * later `clear_thinking`; a template that reads neither ignores both (vLLM drops kwargs its
 * template does not use, llama-server passes them as unused variables). Pure.
 */
import type { ChatCompletionRequest } from './openai.js';

const PRESERVE_THINKING_KWARGS: Readonly<Record<string, unknown>> = Object.freeze({
  preserve_thinking: true,
  clear_thinking: false,
});

/**
 * `request` with the kwargs added; the client's own chat_template_kwargs keys win. The same
 * object when there is nothing to add (every key already set by the client).
 */
export function withPreserveThinking(request: ChatCompletionRequest): ChatCompletionRequest {
  const own = request.chat_template_kwargs;
  const client =
    own && typeof own === 'object' && !Array.isArray(own) ? (own as Record<string, unknown>) : {};
  const missing = Object.keys(PRESERVE_THINKING_KWARGS).filter((k) => !Object.hasOwn(client, k));
  if (missing.length === 0) return request;
  const merged: Record<string, unknown> = { ...client };
  for (const k of missing) merged[k] = PRESERVE_THINKING_KWARGS[k];
  return { ...request, chat_template_kwargs: merged };
}

/**
 * Whether a llama-server /props answer shows a chat template with a switch for keeping past
 * reasoning (its `chat_template` text reads `preserve_thinking` or `clear_thinking`).
 */
export function templateHasThinkingSwitch(props: unknown): boolean {
  const template = (props as { chat_template?: unknown } | null)?.chat_template;
  return typeof template === 'string' && /\b(preserve_thinking|clear_thinking)\b/.test(template);
}
