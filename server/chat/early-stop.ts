/**
 * Stopping the GPU as soon as an answer is decided: a streamed attempt whose output toolproof
 * already knows it will discard is cut off upstream at once (the body destroyed: undici aborts
 * the request, vLLM and llama-server stop generating for a closed connection), instead of being
 * read to the end first. Today's case: call text past the held-text cap (leak-recovery's
 * 'too-long' leak) while a corrective retry can still follow, which is then certain
 * (corrective-retry retries a too-long leak even when the turn was cut off by max_tokens, so the
 * non-streamed path, which can only read the whole body, decides the same).
 */
import { correctiveRetryPolicy } from '../../policies/corrective-retry.js';
import type { ChatCall } from './context.js';
import type { StreamChain } from './policy-runner.js';

/** The attempt's output is thrown away whatever the upstream sends next: stop it now. */
export function discardDecided(call: ChatCall, chain: StreamChain): boolean {
  const tools = call.original.tools;
  if (!Array.isArray(tools) || tools.length === 0) return false;
  if (call.retriesUsed >= call.route.settings.maxRetries) return false;
  if (!call.policies.includes(correctiveRetryPolicy)) return false;
  return chain.unrecoverable();
}
