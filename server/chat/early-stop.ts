/**
 * Stopping the GPU as soon as an answer is decided: a streamed attempt whose output toolproof
 * already knows it will discard is cut off upstream at once (the body destroyed: undici aborts
 * the request, vLLM and llama-server stop generating for a closed connection), instead of being
 * read to the end first. Today's case: call text past the held-text cap (a hook's unrecoverable(),
 * a 'too-long' leak) while a policy that retries such output (Policy.retriesUnrecoverable) can
 * still retry, which is then certain (a too-long leak is retried even when the turn was cut off
 * by max_tokens, so the non-streamed path, which can only read the whole body, decides the same).
 */
import type { Policy } from '../../policies/types.js';
import type { ChatCall } from './context.js';
import type { StreamChain } from '../../policies/composition.js';

/** The attempt's output is thrown away whatever the upstream sends next: stop it now. */
export function discardDecided(call: ChatCall, chain: StreamChain): boolean {
  const tools = call.original.tools;
  if (!Array.isArray(tools) || tools.length === 0) return false;
  if (call.retriesUsed >= call.route.settings.maxRetries) return false;
  if (!call.policies.some(retriesUnrecoverable)) return false;
  return chain.unrecoverable();
}

const retriesUnrecoverable = (p: Policy): boolean => p.retriesUnrecoverable === true;
