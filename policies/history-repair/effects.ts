/** history-repair's effects: counts of what it changed in the history, by kind. */
import { type TallyEffect, tallied } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const HISTORY_REPAIR_POLICY = 'history-repair';

export type HistoryRepairKind =
  | 'synthesized-result'
  | 'orphan-result'
  | 'missing-id'
  | 'duplicate-id'
  | 'missing-type'
  | 'missing-result-id'
  | 'rebound-result'
  | 'reordered-results'
  | 'object-arguments'
  | 'canonicalized-arguments'
  | 'repaired-arguments'
  | 'invalid-arguments'
  | 'empty-tool-calls'
  | 'nine-char-id'
  | 'bridge-message'
  | 'content-normalized'
  | 'merged-messages'
  | 'opening-user'
  | 'merged-system'
  | 'system-as-user';

export type HistoryRepairEffect = TallyEffect<typeof HISTORY_REPAIR_POLICY, HistoryRepairKind>;

/** Each kind is a repair: the trace's `repairs` tally and toolproof_history_repairs_total. */
export function describeHistoryRepairEffect(effect: HistoryRepairEffect): EffectRecord {
  return tallied('repairs', effect);
}
