/** normalize-tool-calls' effects: counts of what it fixed in the upstream's calls, by kind. */
import { type EffectTally, type TallyEffect, tallied } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const NORMALIZE_TOOL_CALLS_POLICY = 'normalize-tool-calls';

export type NormalizeKind =
  | 'duplicate-index'
  | 'duplicate-id'
  | 'missing-id'
  | 'missing-type'
  | 'object-arguments'
  | 'truncated-arguments'
  | 'finish-reason'
  | 'empty-tool-calls'
  /** Choices beyond the request's `n`, dropped (recorded by the drivers: unaskedChoicesEffect). */
  | 'unasked-choice';

export type NormalizeEffect = TallyEffect<typeof NORMALIZE_TOOL_CALLS_POLICY, NormalizeKind>;

export type NormalizeTally = EffectTally<typeof NORMALIZE_TOOL_CALLS_POLICY, NormalizeKind>;

/** Each kind is a normalization: the trace's `normalizations` tally and its counter. */
export function describeNormalizeEffect(effect: NormalizeEffect): EffectRecord {
  return tallied('normalizations', effect);
}
