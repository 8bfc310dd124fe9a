/**
 * The one explicit policy table. Order matters and is the pipeline order on both sides:
 *
 *   request:  history-repair -> force-tool-use
 *   response: normalize-tool-calls -> leak-recovery (parsers/ engine)
 *             -> force-tool-use (unwrap final_answer)
 *             -> client-constraints (tool_choice "none", parallel_tool_calls false)
 *             -> corrective-retry (judges what the client gets)
 *
 * Run the request side in table order and the response side in table order too: each policy
 * only has the hooks for its side, so one order serves both.
 * Names are user-facing config: stable, kebab-case; a rename is breaking.
 */
import { clientConstraintsPolicy } from './client-constraints/index.js';
import { correctiveRetryPolicy } from './corrective-retry/index.js';
import { documentsPolicy } from './documents/index.js';
import { imagesPolicy } from './images/index.js';
import { toolResultCapPolicy } from './tool-result-cap/index.js';
import { forceToolUsePolicy } from './force-tool-use/index.js';
import { historyRepairPolicy } from './history-repair/index.js';
import { leakRecovery } from './leak-recovery/index.js';
import { normalizeToolCallsPolicy } from './normalize-tool-calls/index.js';

/** The effect the drivers record for choices beyond the request's `n` (server/chat/effects.ts). */
export { unaskedChoicesEffect } from './normalize-tool-calls/index.js';
/** The history as it would go upstream, for the Messages API's token count (server/front-doors/messages/count-tokens.ts). */
export { repairHistory } from './history-repair/repair.js';
import type { EffectRecord, Policy } from './types.js';

/**
 * The table: every policy once, in the order of both sides (each side skips policies without
 * its hook). Adding a policy is its folder plus one line here.
 */
const TABLE = [
  documentsPolicy,
  imagesPolicy,
  toolResultCapPolicy,
  historyRepairPolicy,
  normalizeToolCallsPolicy,
  leakRecovery,
  forceToolUsePolicy,
  clientConstraintsPolicy,
  correctiveRetryPolicy,
] as const;

/** The effects a policy declares (its Policy<E>). */
type EffectsOf<P> = P extends Policy<infer E> ? E : never;

/**
 * Every effect a policy of the table can report: the union of each policy's own effect types,
 * discriminated by `policy` and `kind` (each folder's effects.ts lists its members).
 */
export type PolicyEffect = EffectsOf<(typeof TABLE)[number]>;

/** Every policy once, in table order, each typed against the whole union of effects. */
export const POLICIES: readonly Policy<PolicyEffect>[] = Object.freeze([...TABLE]);

const BY_NAME: ReadonlyMap<string, Policy<PolicyEffect>> = new Map(POLICIES.map((p) => [p.name, p]));

/** What `effect` means for the trace and metrics, as the policy that produced it declares. */
export function describeEffect(effect: PolicyEffect): EffectRecord | undefined {
  return BY_NAME.get(effect.policy)?.describeEffect?.(effect);
}
