/** output-budget's effects: a request sent without the output budget its backend refused. */
import type { EffectRecord } from '../types.js';

export const OUTPUT_BUDGET_POLICY = 'output-budget';

export interface OutputBudgetEffect {
  policy: typeof OUTPUT_BUDGET_POLICY;
  kind: 'output-budget-dropped';
  count: 1;
}

/** The log line's `effects` only: the refusal's decision (`output-budget-refused`) already counts and traces the turn. */
export function describeOutputBudgetEffect(_effect: OutputBudgetEffect): EffectRecord | undefined {
  return undefined;
}
