/** client-constraints' effects: calls the client's request forbade, by kind. */
import { type TallyEffect, tallied } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const CLIENT_CONSTRAINTS_POLICY = 'client-constraints';

export type ClientConstraintsKind = 'forbidden-call' | 'dropped-parallel-call';

export type ClientConstraintsEffect = TallyEffect<typeof CLIENT_CONSTRAINTS_POLICY, ClientConstraintsKind>;

/** The trace's `constraints` tally and toolproof_client_constraints_total. */
export function describeClientConstraintsEffect(effect: ClientConstraintsEffect): EffectRecord {
  return tallied('constraints', effect);
}
