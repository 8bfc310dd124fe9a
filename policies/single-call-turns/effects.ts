/** single-call-turns' effects: assistant messages with several tool calls split, one call each. */
import type { EffectRecord } from '../types.js';

export const SINGLE_CALL_TURNS_POLICY = 'single-call-turns';

export interface SingleCallTurnsEffect {
  policy: typeof SINGLE_CALL_TURNS_POLICY;
  kind: 'split-parallel-calls';
  /** Assistant messages split. */
  count: number;
}

/** The log line's `effects` only: the refusal's decision already counts and traces the turn. */
export function describeSingleCallTurnsEffect(_effect: SingleCallTurnsEffect): EffectRecord | undefined {
  return undefined;
}
