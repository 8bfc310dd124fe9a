/** Counts effects by kind so each kind is reported once with a count (metric label sets stay small). */
import type { PolicyEffect } from '../types.js';

export class EffectTally {
  private readonly counts = new Map<string, number>();

  constructor(private readonly policy: string) {}

  add(kind: string, count = 1): void {
    if (count <= 0) return;
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + count);
  }

  get size(): number {
    return this.counts.size;
  }

  toEffects(): PolicyEffect[] {
    return [...this.counts].map(([kind, count]) => ({ policy: this.policy, kind, count }));
  }
}
