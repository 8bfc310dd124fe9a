/** Counts effects by kind so each kind is reported once with a count (metric label sets stay small). */
import type { EffectRecord, EffectTallyName, PolicyEffect } from '../types.js';

/** An effect that only adds its count to one of the trace's tallies (and that tally's counter). */
export function tallied(
  tally: EffectTallyName,
  effect: PolicyEffect,
  label: string = effect.kind,
): EffectRecord {
  return { type: 'tally', tally, key: effect.kind, label, count: effect.count ?? 1 };
}

export class EffectTally {
  /** Created on the first effect: most streams have none, and each open stream holds its tallies. */
  private counts: Map<string, number> | undefined;

  constructor(private readonly policy: string) {}

  add(kind: string, count = 1): void {
    if (count <= 0) return;
    this.counts ??= new Map();
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + count);
  }

  get size(): number {
    return this.counts?.size ?? 0;
  }

  toEffects(): PolicyEffect[] {
    if (!this.counts) return [];
    return [...this.counts].map(([kind, count]) => ({ policy: this.policy, kind, count }));
  }
}
