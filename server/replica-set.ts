/**
 * The replicas of one upstream with session affinity (docs/affinity.md): one undici Pool per
 * replica, a count of requests in flight on each, and a short memory of replicas that refused a
 * connection. Which replica a request goes to:
 * - with an affinity key, the first replica in the key's rendezvous order that is up: every
 *   worker and every toolproof replica computes the same order from the same list;
 * - when that replica is saturated (TOOLPROOF_AFFINITY_MAX_INFLIGHT in flight), the least
 *   loaded one that is up; its cache is cold for this conversation, but a queue is worse;
 * - without a key, the least loaded one (ties: rotating).
 * A replica that refused a connection is skipped for DOWN_MS (the request is retried on the
 * next one at once); after that it is tried again, and its conversations come back to it.
 */
import { Pool } from 'undici';
import { rendezvousOrder } from './affinity.js';
import type { AffinityConfig } from './config.js';

/** How long a replica that refused a connection is passed over. */
const DOWN_MS = 2_000;

export class ReplicaSet {
  readonly pools: Pool[];
  private readonly inflight: number[];
  private readonly downUntil: number[];
  private rotate = 0;

  constructor(
    readonly origins: readonly string[],
    options: Pool.Options,
    private readonly affinity: AffinityConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.pools = origins.map((o) => new Pool(o, options));
    this.inflight = origins.map(() => 0);
    this.downUntil = origins.map(() => 0);
  }

  /** Requests in flight per replica (tests, and the least-loaded choice). */
  load(): readonly number[] {
    return this.inflight;
  }

  /** The replica for this attempt; `tried` were refused already for this request (skipped). */
  pick(key: string | undefined, tried: readonly number[]): number {
    const now = this.now();
    const usable = (i: number) => !tried.includes(i) && this.downUntil[i]! <= now;
    if (key !== undefined) {
      const order = rendezvousOrder(key, this.origins);
      const first = order.find(usable);
      if (first !== undefined && this.inflight[first]! < this.affinity.maxInflight) return first;
      // Saturated (or every replica down): the least loaded, in the key's order on ties.
      return this.leastLoaded(order, usable) ?? order.find((i) => !tried.includes(i)) ?? order[0]!;
    }
    const n = this.origins.length;
    const start = this.rotate++ % n;
    const order = Array.from({ length: n }, (_, k) => (start + k) % n);
    return this.leastLoaded(order, usable) ?? order.find((i) => !tried.includes(i)) ?? start;
  }

  private leastLoaded(order: readonly number[], usable: (i: number) => boolean): number | undefined {
    let best: number | undefined;
    for (const i of order) {
      if (!usable(i)) continue;
      if (best === undefined || this.inflight[i]! < this.inflight[best]!) best = i;
    }
    return best;
  }

  markDown(i: number): void {
    this.downUntil[i] = this.now() + DOWN_MS;
  }

  /** Counts one request in flight on `i`; the returned function ends it (call once). */
  acquire(i: number): () => void {
    this.inflight[i]!++;
    return () => {
      this.inflight[i]!--;
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.close()));
  }

  async destroy(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.destroy()));
  }
}
