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

/**
 * Whether a llama-server /props answer shows a chat template that opens the reasoning in the
 * generation prompt, so the output starts inside it (settings.startsInReasoning 'auto'):
 * - true: the `add_generation_prompt` branch writes `<think>` unconditionally and no `</think>`
 *   after it (QwQ, DeepSeek-R1-0528, Qwen3-Thinking-2507: `…assistant\n<think>\n`);
 * - 'maybe': it writes `<think>` under a switch of its own (DeepSeek-V3.1's `thinking`
 *   kwarg: `{% if not thinking %}</think>{% else %}<think>{% endif %}`), which the request sets;
 * - false: no `<think>` there, or one closed in the same branch (Qwen3's
 *   `<think>\n\n</think>` when `enable_thinking` is false), or no template.
 * Only the generic `<think>` is read; a family's own section (Cohere's, Kimi K3's) still needs
 * the setting. A heuristic over the template text, never run as Jinja.
 */
export function templateOpensReasoning(props: unknown): boolean | 'maybe' {
  const template = (props as { chat_template?: unknown } | null)?.chat_template;
  if (typeof template !== 'string') return false;
  const branches = [...template.matchAll(/\{%-?\s*if\s+add_generation_prompt\b[^%]*-?%\}/g)];
  const last = branches[branches.length - 1];
  if (!last) return false;
  const tail = template.slice(last.index);
  const open = tail.lastIndexOf('<think>');
  if (open < 0 || tail.indexOf('</think>', open) >= 0) return false;
  // how many `if` blocks are open at the <think>: 1 is the generation-prompt branch itself
  const before = tail.slice(0, open);
  const depth =
    (before.match(/\{%-?\s*if\b/g)?.length ?? 0) - (before.match(/\{%-?\s*endif\b/g)?.length ?? 0);
  if (depth <= 0) return false;
  return depth === 1 ? true : 'maybe';
}
