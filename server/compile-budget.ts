/**
 * What compiling client tool schemas may cost (policies/support/validator-cache.ts estimates it,
 * in units of about a microsecond of event loop). Two budgets, both paid by every compile:
 * - per request: REQUEST_COMPILE_BUDGET, so one request never stalls the loop for long
 *   (20 called tools with 100-350 ms schemas blocked every stream for 5 s);
 * - per process: a bucket refilled at PROCESS_COMPILE_RATE per second up to PROCESS_COMPILE_BURST,
 *   so many requests with a distinct schema each cannot turn the process into a schema compiler.
 * A compile neither can pay for does not happen: that tool's call goes unchecked, and the log
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

export class CompileBudgets {
  private tokens = PROCESS_COMPILE_BURST;
  private last: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.last = now();
  }

  private takeProcess(cost: number): boolean {
    const t = this.now();
    this.tokens = Math.min(
      PROCESS_COMPILE_BURST,
      this.tokens + ((t - this.last) / 1000) * PROCESS_COMPILE_RATE,
    );
    this.last = t;
    if (cost > this.tokens) return false;
    this.tokens -= cost;
    return true;
  }

  /** A fresh per-request budget, drawing on the process's too. */
  forRequest(limit = REQUEST_COMPILE_BUDGET): CompileBudget {
    let left = limit;
    return {
      take: (cost: number): boolean => {
        if (cost > left || !this.takeProcess(cost)) return false;
        left -= cost;
        return true;
      },
    };
  }
}
