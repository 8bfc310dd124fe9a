/**
 * What the upstream's prefix cache did for a request, and generation thrown away: read from
 * what the backend reports (usage.prompt_tokens_details.cached_tokens: vLLM with
 * --enable-prompt-tokens-details, llama-server; llama-server's timings.cache_n when usage is
 * absent, e.g. a stream without include_usage). Counted once per request when its log line is
 * written (metrics and the harness trace).
 */
import type { Usage } from '../../protocol/openai.js';
import type { Metrics } from '../metrics.js';
import type { ChatCall } from './context.js';

/**
 * A token count as the upstream reported it, fit to count: a finite number >= 0, else 0. An
 * upstream may send -5, "10" or 1e400 (which JSON reads as Infinity), and a prom-client counter
 * throws on a decrease or a non-finite value: thrown while a response closes, that ended the
 * process.
 */
export function tokenCount(n: unknown): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0;
}

/** usage.prompt_tokens_details.cached_tokens, when the backend reported it. */
function cachedTokensOf(usage: Usage | undefined): number | undefined {
  const details = usage?.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined;
  const n = details?.cached_tokens;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** llama-server's `timings` object of a response or a stream's last chunk: its cache_n and prompt_n. */
export function noteTimings(call: ChatCall, timings: unknown): void {
  if (!timings || typeof timings !== 'object') return;
  const { cache_n, prompt_n } = timings as { cache_n?: unknown; prompt_n?: unknown };
  if (typeof cache_n !== 'number' || typeof prompt_n !== 'number') return;
  const cached = tokenCount(cache_n);
  const prev = call.timings ?? { cached: 0, prompt: 0 };
  call.timings = { cached: prev.cached + cached, prompt: prev.prompt + cached + tokenCount(prompt_n) };
}

/** An attempt toolproof discarded (a corrective retry follows): what it generated was wasted. */
export function noteDiscarded(call: ChatCall, usage: Usage | undefined): void {
  call.discardedTokens += tokenCount(usage?.completion_tokens);
}

export interface PromptCacheFacts {
  prompt: number;
  cached: number;
}

/**
 * The request's prompt and cached tokens (summed over its attempts), from usage or else from
 * timings; undefined when the backend reported neither. Counts them, once, on `metrics`.
 */
export function recordPromptCache(
  call: ChatCall,
  usage: Usage | undefined,
  metrics: Metrics,
): PromptCacheFacts | undefined {
  const model = call.route.name;
  if (call.discardedTokens > 0) metrics.discardedCompletionTokens.labels(model).inc(call.discardedTokens);
  if (call.original.messages?.some?.((m) => m?.role === 'assistant'))
    metrics.multiTurnRequests.labels(model).inc();
  const cached = cachedTokensOf(usage);
  const facts =
    cached !== undefined && typeof usage?.prompt_tokens === 'number'
      ? { prompt: tokenCount(usage.prompt_tokens), cached }
      : call.timings;
  if (!facts) return undefined;
  metrics.promptTokens.labels(model).inc(facts.prompt);
  metrics.promptCachedTokens.labels(model).inc(facts.cached);
  return facts;
}
