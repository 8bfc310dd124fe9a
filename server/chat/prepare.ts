/**
 * The one way a client's chat request becomes the upstream request, for the attempt loop (first
 * attempt and the tool_choice fallback) and for the Messages API's token count alike: the
 * model's request policies, in table order, with the request's facts built once on the context.
 * Every settings-dependent rewrite is a request policy (policies/registry.ts); nothing here
 * rewrites a request itself.
 */
import { type RequestPhase, runRequestPolicies } from '../../policies/composition.js';
import { buildToolSet } from '../../policies/kit/tool-set.js';
import type { PolicyEffect } from '../../policies/registry.js';
import type { Policy, PolicyContext } from '../../policies/types.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { ResolvedRoute } from '../routing.js';

/**
 * What the request's entry says of it: the hosted tools a front door's translation left out,
 * whether its key needs the stream's usage (its tokens per minute).
 */
export type DoorFacts = Pick<PolicyContext, 'hostedTools' | 'streamUsage'>;

/** The facts of a request every policy reads: its tool set, the route's upstream name, the door's. */
export function requestFacts(
  route: Pick<ResolvedRoute, 'settings' | 'upstreamModel'>,
  original: ChatCompletionRequest,
  door: DoorFacts = {},
): Pick<PolicyContext, 'tools' | 'upstreamModel' | 'hostedTools' | 'streamUsage'> {
  const tools = buildToolSet(original, route.settings);
  return {
    tools,
    ...(route.upstreamModel !== undefined ? { upstreamModel: route.upstreamModel } : {}),
    ...(door.hostedTools && door.hostedTools.dropped.length > 0 ? { hostedTools: door.hostedTools } : {}),
    ...(door.streamUsage === true ? { streamUsage: true } : {}),
  };
}

/** A first attempt's context, for a caller without a ChatCall (count_tokens). */
export function firstAttemptContext(
  route: Pick<ResolvedRoute, 'name' | 'settings' | 'upstreamModel'>,
  original: ChatCompletionRequest,
  requiredRejected = false,
  door: DoorFacts = {},
): PolicyContext {
  return {
    model: route.name,
    settings: route.settings,
    requiredRejected,
    attempt: 0,
    retriesUsed: 0,
    ...requestFacts(route, original, door),
  };
}

/** The request as it goes upstream, with what each policy did (and its memo for the response side). */
export function prepareRequest(
  policies: readonly Policy<PolicyEffect>[],
  original: ChatCompletionRequest,
  ctx: PolicyContext,
): RequestPhase<PolicyEffect> {
  return runRequestPolicies(policies, original, ctx);
}
