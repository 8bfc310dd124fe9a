/**
 * The one explicit policy table. Order matters and is the pipeline order on both sides:
 *
 *   request:  preserve-thinking -> hosted-tools -> (content: unknown-parts, documents .. tool-images .. tool-result-cap, truncation) -> history-repair -> single-call-turns -> single-choice
 *             -> tool-fields -> tool-names -> force-tool-use
 *             -> guided-schema -> stream-logprobs -> upstream-request
 *   response: tool-names (calls back under the client's names)
 *             -> normalize-tool-calls -> leak-recovery (parsers/ engine)
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
import { imageUrlsPolicy } from './image-urls/index.js';
import { imageDecodePolicy } from './image-decode/index.js';
import { imageLimitPolicy } from './image-limit/index.js';
import { toolImagesPolicy } from './tool-images/index.js';
import { audioPolicy } from './audio/index.js';
import { audioDecodePolicy } from './audio-decode/index.js';
import { videoPolicy } from './video/index.js';
import { unknownPartsPolicy } from './unknown-parts/index.js';
import { toolResultCapPolicy } from './tool-result-cap/index.js';
import { truncationPolicy } from './truncation/index.js';
import { forceToolUsePolicy } from './force-tool-use/index.js';
import { historyRepairPolicy } from './history-repair/index.js';
import { leakRecovery } from './leak-recovery/index.js';
import { normalizeToolCallsPolicy } from './normalize-tool-calls/index.js';
import { preserveThinkingPolicy } from './preserve-thinking/index.js';
import { upstreamRequestPolicy } from './upstream-request/index.js';
import { guidedSchemaPolicy } from './guided-schema/index.js';
import { toolFieldsPolicy } from './tool-fields/index.js';
import { hostedToolsPolicy } from './hosted-tools/index.js';
import { singleCallTurnsPolicy } from './single-call-turns/index.js';
import { singleChoicePolicy } from './single-choice/index.js';
import { streamLogprobsPolicy } from './stream-logprobs/index.js';
import { outputBudgetPolicy } from './output-budget/index.js';
import { toolNamesPolicy } from './tool-names/index.js';

/** The effect the drivers record for choices beyond the request's `n` (server/chat/effects.ts). */
export { unaskedChoicesEffect } from './normalize-tool-calls/index.js';
import type { EffectRecord, Policy, SettingsSchema } from './types.js';

/**
 * The table: every policy once, in the order of both sides (each side skips policies without
 * its hook). Adding a policy is its folder plus one line here.
 */
const TABLE = [
  // First: it was applied to the client's request before anything else (kwargs after the prompt).
  preserveThinkingPolicy,
  // Before any rewrite: a request the model refuses (hostedTools: reject) is refused as it came.
  hostedToolsPolicy,
  // First of the content: a part the backend's parser refused is text before the rest read it.
  unknownPartsPolicy,
  documentsPolicy,
  imagesPolicy,
  // After images: a model that cannot see has its images as notes already, fetched or not.
  imageUrlsPolicy,
  imageDecodePolicy,
  // After the images noted for what they are: only images that go upstream count against a limit.
  imageLimitPolicy,
  // After the images noted: only images that go upstream move out of the tool results.
  toolImagesPolicy,
  audioPolicy,
  // After audio: a model that cannot take audio has its clips as notes already.
  audioDecodePolicy,
  videoPolicy,
  toolResultCapPolicy,
  // After tool-result-cap: the oldest messages go only when cutting the results was not enough.
  truncationPolicy,
  historyRepairPolicy,
  // After history-repair: every call has its result to follow it.
  singleCallTurnsPolicy,
  // Only `n`: once the upstream refused several choices, each is asked by a request of its own.
  singleChoicePolicy,
  // Before force-tool-use: a request left without tools is not forced, and sends no tool_choice.
  toolFieldsPolicy,
  normalizeToolCallsPolicy,
  leakRecovery,
  // Its response side after leak-recovery (a call leaked as text names the alias the model was
  // shown) and before the rest: every later policy reads the calls under the client's names.
  toolNamesPolicy,
  forceToolUsePolicy,
  clientConstraintsPolicy,
  correctiveRetryPolicy,
  // After force-tool-use: the synthetic answer tool carries the client's schema too.
  guidedSchemaPolicy,
  // After force-tool-use: a request that asked for logprobs is not forced, streamed or not.
  streamLogprobsPolicy,
  // After the rest: only the output budget of what goes changes.
  outputBudgetPolicy,
  // Last on the request side: the upstream's model name and usage on whatever the others rewrote.
  upstreamRequestPolicy,
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

/**
 * The per-model settings every policy declares (Policy.settingsSchema), by key, for
 * server/config.ts to compose into the settings schema. A key declared twice is a bug.
 */
export function policySettingsSchema(policies: readonly Policy<PolicyEffect>[] = POLICIES): SettingsSchema {
  const out: Record<string, object> = {};
  for (const p of policies) {
    for (const [key, schema] of Object.entries(p.settingsSchema ?? {})) {
      if (Object.hasOwn(out, key)) throw new Error(`setting "${key}" declared by two policies`);
      out[key] = schema;
    }
  }
  return Object.freeze(out);
}
