/** single-choice's effects: a request of `n` choices sent as one request per choice. */
import type { EffectRecord } from '../types.js';

export const SINGLE_CHOICE_POLICY = 'single-choice';

export interface SingleChoiceEffect {
  policy: typeof SINGLE_CHOICE_POLICY;
  kind: 'one-request-per-choice';
  /** The choices the client asked for (`n`), each now asked by a request of its own. */
  count: number;
}

/** The log line's `effects` only: the refusal's decision already counts and traces the turn. */
export function describeSingleChoiceEffect(_effect: SingleChoiceEffect): EffectRecord | undefined {
  return undefined;
}
