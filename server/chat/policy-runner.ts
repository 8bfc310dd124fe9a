/**
 * What the server adds to the policy composition (policies/composition.ts): reading an answer
 * out of an upstream error body, with the server's clock.
 */
import type { ChatCompletion, ChatCompletionRequest } from '../../protocol/openai.js';
import type { PolicyEffect } from '../../policies/registry.js';
import type { ChatCall } from './context.js';

/**
 * The first policy that can read an answer out of an upstream error body wins (leak recovery
 * owns llama-server's "Failed to parse input" salvage). The clock is the server's to read.
 */
export function salvageUpstreamError(
  call: ChatCall,
  sent: ChatCompletionRequest,
  body: unknown,
): { completion: ChatCompletion; effects: PolicyEffect[] } | null {
  for (const policy of call.policies) {
    const salvaged = policy.onUpstreamError?.(body, call.policyContext(), sent, call.original);
    if (!salvaged) continue;
    const completion = salvaged.completion.created
      ? salvaged.completion
      : { ...salvaged.completion, created: Math.floor(Date.now() / 1000) };
    return { completion, effects: salvaged.effects };
  }
  return null;
}
