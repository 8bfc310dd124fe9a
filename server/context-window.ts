/**
 * How long a prompt is against a model's window, for the long-context route (config
 * `longContext`). The window is the YAML's `contextWindow`; reading it from the backend (vLLM's
 * /v1/models `max_model_len`, llama-server's /props `n_ctx`) is the seam `windowOf` leaves for
 * that. The prompt is estimated from its bytes (about 4 per token for English and code): a
 * cheap, conservative reading, since a prompt near the limit is better sent to the long model.
 */
import { parseContextOverflow } from '../protocol/context-overflow.js';
import type { ModelSettings } from '../protocol/settings.js';
import { type FallbackMemory, memoryModel } from './fallback-memory.js';
import type { ResolvedRoute } from './routing.js';

const BYTES_PER_TOKEN = 4;

/** The model's window in tokens, when known. */
export function windowOf(route: ResolvedRoute): number | undefined {
  // The YAML's, else the backend's (read at start-up: server/capability-probe.ts); 0 = unknown.
  return route.contextWindow ?? (route.settings.contextWindow > 0 ? route.settings.contextWindow : undefined);
}

/** An estimate of the prompt's tokens from the request's serialized size. */
export function promptTokenEstimate(bodyBytes: number): number {
  return Math.ceil(bodyBytes / BYTES_PER_TOKEN);
}

/**
 * The window a backend's refusal names (llama-server's exceed_context_size_error: n_ctx or its
 * words; vLLM's "maximum context length is M tokens"), when the window was not known: the
 * upstream's text is untrusted, so only a 400 or 413 is read (protocol/context-overflow.ts reads
 * at most the message's first 2,000 characters) and only a window in a sane range is believed.
 */
export function windowFromRefusal(status: number, body: unknown): number | undefined {
  if (status !== 400 && status !== 413) return undefined;
  const max = parseContextOverflow(body)?.max;
  return max !== undefined && Number.isSafeInteger(max) && max >= MIN_WINDOW && max <= MAX_WINDOW
    ? max
    : undefined;
}

/**
 * The prompt tokens an overflow refusal reported for the prompt it refused (vLLM's `input tokens`,
 * llama-server's `n_prompt_tokens`), or undefined when it reported none or only a bound.
 */
export function promptTokensFromRefusal(status: number, body: unknown): number | undefined {
  if (status !== 400 && status !== 413) return undefined;
  const overflow = parseContextOverflow(body);
  // A bound (vLLM stopped tokenizing one token past what it takes) counts no tokenizer.
  const prompt = overflow?.bound ? undefined : overflow?.prompt;
  return prompt !== undefined && Number.isSafeInteger(prompt) && prompt > 0 ? prompt : undefined;
}

/** No model has a window under this many tokens (a template and one question fill 128). */
const MIN_WINDOW = 128;
/** Nor over this many (16M tokens; the largest served today hold 10M). */
const MAX_WINDOW = 16 * 1024 * 1024;

/**
 * The memory's key of what is learnt of a model (its window, the estimate's scale): the model as
 * its upstream knows it, and the asking key (fallback-memory.ts memoryModel).
 */
function learntKey(
  what: 'context-window' | 'estimate-scale',
  route: ResolvedRoute,
  model: unknown,
  key: string | undefined,
): string {
  return memoryModel(`${route.upstreamModel ?? String(model)}\u0000${what}`, key);
}

/** Remember the window `route`'s upstream refused a prompt over, for the route's fallbackTtlSeconds. */
export function rememberWindow(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  window: number,
  /** The asking key's name: the window one key's refusal named is that key's (memoryModel). */
  key?: string,
): void {
  memory?.remember(
    route.client.label,
    learntKey('context-window', route, model, key),
    route.settings.fallbackTtlSeconds,
    route.name,
    window,
  );
}

/**
 * Remember that `route`'s upstream counts `scale` times the prompt estimate (policies/kit/overflow.ts
 * calibrationScale), for the route's fallbackTtlSeconds: never less than one remembered (the
 * boundary it places only moves on, docs/prefix.md exception 9).
 */
export function rememberEstimateScale(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  scale: number,
  key?: string,
): void {
  if (!memory) return;
  const k = learntKey('estimate-scale', route, model, key);
  const known = memory.valueOf(route.client.label, k) ?? 1;
  memory.remember(
    route.client.label,
    k,
    route.settings.fallbackTtlSeconds,
    route.name,
    Math.max(known, scale),
  );
}

/** The scale remembered for `route` (each use keeps it another TTL), or undefined. */
export function learntEstimateScale(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  key?: string,
): number | undefined {
  if (!memory || memory.size === 0) return undefined;
  const scale = memory.valueOf(route.client.label, learntKey('estimate-scale', route, model, key));
  if (scale === undefined || !(scale > 1)) return undefined;
  rememberEstimateScale(memory, route, model, scale, key);
  return scale;
}

/**
 * `route` with the window its upstream's refusal named, when its own is unknown or larger (a
 * `contextWindow` configured past the backend's, a llama-server whose slots split its context),
 * and one is remembered (each use keeps it another TTL: a session in use keeps its bytes, as
 * refusals.ts).
 */
export function withLearntWindow(
  route: ResolvedRoute,
  memory: FallbackMemory | undefined,
  model: unknown,
  key?: string,
): ResolvedRoute {
  if (!memory || memory.size === 0) return route;
  const window = memory.valueOf(route.client.label, learntKey('context-window', route, model, key));
  if (window === undefined) return route;
  const known = route.settings.contextWindow;
  if (known > 0 && window >= known) return route;
  rememberWindow(memory, route, model, window, key);
  return withWindow(route, window);
}

/**
 * Per settings object and window, one settings object carrying it: the policies enabled for a
 * settings object are computed once per object (policies/composition.ts), so every turn of a
 * learnt window gets the same one. A handful of windows per model at most; bounded all the same.
 */
const windowed = new WeakMap<ModelSettings, Map<number, ModelSettings>>();

/** `route` whose settings carry `window` as the model's contextWindow. */
export function withWindow(route: ResolvedRoute, window: number): ResolvedRoute {
  let byWindow = windowed.get(route.settings);
  if (!byWindow) windowed.set(route.settings, (byWindow = new Map()));
  let settings = byWindow.get(window);
  if (!settings) {
    if (byWindow.size >= 16) byWindow.clear();
    settings = Object.freeze({ ...route.settings, contextWindow: window });
    byWindow.set(window, settings);
  }
  return { ...route, settings };
}
