/** Counts effects by kind so each kind is reported once with a count (metric label sets stay small). */
import type { PolicyEffect } from '../types.js';

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
