/**
 * Typed facts of the response attempt being judged, read from the effects collected so far
 * (PolicyContext.attemptEffects) through what each effect means (PolicyContext.describeEffect):
 * no policy reads another's effects by its name or kinds.
 */
import type { EffectLeak, PolicyContext } from '../types.js';

/** The leaks found so far in this attempt (each `leak` record), in order. */
export function attemptLeaks(ctx: PolicyContext): EffectLeak[] {
  const out: EffectLeak[] = [];
  const describe = ctx.describeEffect;
  if (!describe) return out;
  for (const e of ctx.attemptEffects ?? []) {
    const record = describe(e);
    if (record?.type === 'leak') out.push(record.leak);
  }
  return out;
}

/** Whether a forced request was answered in prose in this attempt (a `forced-but-prose` record). */
export function attemptForcedButProse(ctx: PolicyContext): boolean {
  const describe = ctx.describeEffect;
  if (!describe) return false;
  for (const e of ctx.attemptEffects ?? []) if (describe(e)?.type === 'forced-but-prose') return true;
  return false;
}

/** Whether a final answer reached the client's content in this attempt (a `final-answer` record). */
export function attemptFinalAnswer(ctx: PolicyContext): boolean {
  const describe = ctx.describeEffect;
  if (!describe) return false;
  for (const e of ctx.attemptEffects ?? []) if (describe(e)?.type === 'final-answer') return true;
  return false;
}
