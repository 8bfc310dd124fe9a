/**
 * What compiling client tool schemas may cost (the policies' validator cache estimates it, in
 * units of about a microsecond of event loop: PolicyContext.compileBudget). Budgets paid by every
 * compile:
 * - per request: REQUEST_COMPILE_BUDGET, so one request never stalls the loop for long
 *   (20 called tools with 100-350 ms schemas blocked every stream for 5 s);
 * - per process: a bucket refilled at PROCESS_COMPILE_RATE per second up to PROCESS_COMPILE_BURST,
 *   so many requests with a distinct schema each cannot turn the process into a schema compiler;
 * - per key, when several keys share the process: a bucket of KEY_SHARE of the process's rate
 *   and burst, so one key sending a distinct costly schema with every request drains at most that
 *   share and another key's schemas are still checked (one bucket for all let one key leave every
 *   other key's tool calls unchecked).
 * A compile these cannot pay for does not happen: that tool's call goes unchecked, and the log
 * line's `unenforced` and toolproof_schemas_unenforced_total{cause="budget"} say so. Cached
 * schemas cost nothing.
 */
import type { CompileBudget } from '../policies/types.js';

/** Units one request may spend on compiles (~60 ms on a small shared box). */
const REQUEST_COMPILE_BUDGET = 60_000;
/** Units the process gains back per second (a quarter of one core at most, on that box). */
const PROCESS_COMPILE_RATE = 250_000;
/** Units the process may spend in a burst. */
const PROCESS_COMPILE_BURST = 500_000;
/** The part of the process's budget one key may draw on when several keys share it. */
const KEY_SHARE = 0.5;
/** Keys' buckets kept (names come from the configuration; reloads may add more). */
const MAX_KEY_BUCKETS = 4096;

/** A token bucket on the given clock. */
class Bucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** What the bucket holds now. */
  level(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.rate);
    this.last = t;
    return this.tokens;
  }

  spend(cost: number): void {
    this.tokens -= cost;
  }
}

export class CompileBudgets {
  private readonly process: Bucket;
  private readonly keys = new Map<string, Bucket>();

  constructor(private readonly now: () => number = () => performance.now()) {
    this.process = new Bucket(PROCESS_COMPILE_RATE, PROCESS_COMPILE_BURST, now);
  }

  private keyBucket(key: string): Bucket {
    let bucket = this.keys.get(key);
    if (bucket === undefined) {
      if (this.keys.size >= MAX_KEY_BUCKETS) this.keys.clear();
      bucket = new Bucket(PROCESS_COMPILE_RATE * KEY_SHARE, PROCESS_COMPILE_BURST * KEY_SHARE, this.now);
      this.keys.set(key, bucket);
    }
    return bucket;
  }

  /**
   * A fresh per-request budget, drawing on the process's too, and on its key's when `key` is
   * given (the key's name, when several keys share this process).
   */
  forRequest(limit = REQUEST_COMPILE_BUDGET, key?: string): CompileBudget {
    let left = limit;
    const own = key === undefined ? undefined : this.keyBucket(key);
    return {
      take: (cost: number): boolean => {
        if (cost > left || cost > this.process.level() || (own && cost > own.level())) return false;
        left -= cost;
        this.process.spend(cost);
        own?.spend(cost);
        return true;
      },
    };
  }
}
