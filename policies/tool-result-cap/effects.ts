/** tool-result-cap's effects: tool results cut to fit the model's window. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const TOOL_RESULT_CAP_POLICY = 'tool-result-cap';

export type ToolResultCapKind = 'tool-result-cut';

export type ToolResultCapEffect = TallyEffect<typeof TOOL_RESULT_CAP_POLICY, ToolResultCapKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeToolResultCapEffect(effect: ToolResultCapEffect): EffectRecord {
  const { kind, count } = effect;
  const what = count === 1 ? '1 tool result was' : `${count} tool results were`;
  return { type: 'degraded', kind, count, reason: `${what} cut to maxToolResultTokens` };
}
