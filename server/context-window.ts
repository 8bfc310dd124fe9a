/**
 * How long a prompt is against a model's window, for the long-context route (config
 * `longContext`). The window is the YAML's `contextWindow`; reading it from the backend (vLLM's
 * /v1/models `max_model_len`, llama-server's /props `n_ctx`) is the seam `windowOf` leaves for
 * that. The prompt is estimated from its bytes (about 4 per token for English and code): a
 * cheap, conservative reading, since a prompt near the limit is better sent to the long model.
 */
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
