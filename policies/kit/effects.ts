/** Counts effects by kind so each kind is reported once with a count (metric label sets stay small). */
import type { EffectRecord, EffectTallyName } from '../types.js';

/** An effect that is only a count of one kind, e.g. {policy:'history-repair', kind:'missing-id', count:2}. */
export interface TallyEffect<P extends string, K extends string> {
  policy: P;
  kind: K;
  count: number;
}

/** An effect that only adds its count to one of the trace's tallies (and that tally's counter). */
export function tallied(
  tally: EffectTallyName,
  effect: { kind: string; count?: number },
  label: string = effect.kind,
): EffectRecord {
  return { type: 'tally', tally, key: effect.kind, label, count: effect.count ?? 1 };
}

export class EffectTally<P extends string, K extends string> {
  /** Created on the first effect: most streams have none, and each open stream holds its tallies. */
  private counts: Map<K, number> | undefined;

  constructor(private readonly policy: P) {}

  add(kind: K, count = 1): void {
    if (count <= 0) return;
    this.counts ??= new Map();
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + count);
  }

  get size(): number {
    return this.counts?.size ?? 0;
  }

  toEffects(): TallyEffect<P, K>[] {
    if (!this.counts) return [];
    return [...this.counts].map(([kind, count]) => ({ policy: this.policy, kind, count }));
  }
}

/**
 * An effect made once and handed to every request that has it (a module's constant): frozen, its
 * detail too (a plain object of primitives), so that no reader can change what another request
 * reports, and readers that keep effects can know it by identity (the capture: no fields walked).
 * An effect that carries a request's own text (a leak's source, a retry's feedback, a field name
 * the model chose) stays made per request.
 */
export function constantEffect<E extends object>(effect: E): E {
  const detail = (effect as { detail?: unknown }).detail;
  if (typeof detail === 'object' && detail !== null) Object.freeze(detail);
  return Object.freeze(effect);
}
