/**
 * The cluster primary's budget for relaying inspector answers (capture/cluster.ts), per reader:
 * each key that reads the inspector (its name; the flat keys share one, as does everyone on a
 * server without keys) has its own share, so one key's script reading sessions in a loop is
 * refused its own questions, never another key's. Until redteam12 the budget was one for all
 * readers: a loop of session reads over full rings kept the relay over its budget, and every
 * other key's page read 429s for as long as the loop ran.
 *
 * - Rate: the relayed characters each reader owes are paid back at `ratePerS` in all, split
 *   evenly among the readers that owe any (what one does not need goes to the others): a reader
 *   alone has the whole rate, two at once half each; the total never exceeds `ratePerS`.
 * - Burst: a reader whose debt is over `burst` is refused (the seconds until it is paid back at
 *   its share of the rate); all readers' debts together over `totalBurst` refuse everyone.
 * - Concurrency: one question in flight per reader, `maxGathers` in all.
 */

export interface RelayBudgetOptions {
  ratePerS: number;
  burst: number;
  totalBurst: number;
  maxGathers: number;
  /** ms; Date.now by default. */
  now?: () => number;
}

interface Reader {
  owed: number;
  inFlight: number;
}

export class RelayBudget {
  private readonly readers = new Map<string, Reader>();
  private at: number;
  private gathers = 0;

  constructor(private readonly opts: RelayBudgetOptions) {
    this.at = this.now();
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }

  /**
   * Pays back what the time since the last look earned, evenly among the readers that owe (the
   * smallest debts first, what they do not need going to the others). Readers that owe nothing
   * and have nothing in flight are forgotten: the map holds only current readers.
   */
  private settle(): void {
    const now = this.now();
    let pay = ((now - this.at) / 1000) * this.opts.ratePerS;
    this.at = now;
    const owing = [...this.readers.values()].filter((r) => r.owed > 0).sort((a, b) => a.owed - b.owed);
    for (let i = 0; i < owing.length && pay > 0; i++) {
      const r = owing[i]!;
      const share = pay / (owing.length - i);
      const paid = Math.min(r.owed, share);
      r.owed -= paid;
      pay -= paid;
    }
    for (const [name, r] of this.readers) if (r.owed <= 0 && r.inFlight === 0) this.readers.delete(name);
  }

  private total(): number {
    let sum = 0;
    for (const r of this.readers.values()) sum += r.owed;
    return sum;
  }

  /**
   * Whether `reader`'s question passes now: 0 when it does (then it is in flight until `done`),
   * else the seconds to wait (at least 1).
   */
  admit(reader: string): number {
    this.settle();
    const r = this.readers.get(reader);
    const owing = [...this.readers.values()].filter((x) => x.owed > 0).length;
    const myRate = this.opts.ratePerS / Math.max(1, owing + (r && r.owed > 0 ? 0 : 1));
    const mine = (r?.owed ?? 0) - this.opts.burst;
    const all = this.total() - this.opts.totalBurst;
    if (mine > 0 || all > 0 || (r?.inFlight ?? 0) > 0 || this.gathers >= this.opts.maxGathers) {
      const wait = Math.max(mine / myRate, all / this.opts.ratePerS);
      return Math.max(1, Math.ceil(wait));
    }
    if (r) r.inFlight++;
    else this.readers.set(reader, { owed: 0, inFlight: 1 });
    this.gathers++;
    return 0;
  }

  /** `chars` relayed for `reader`'s question. */
  relayed(reader: string, chars: number): void {
    this.settle();
    const r = this.readers.get(reader);
    if (r) r.owed += chars;
    else this.readers.set(reader, { owed: chars, inFlight: 0 });
  }

  /** `reader`'s question answered (or given up). */
  done(reader: string): void {
    const r = this.readers.get(reader);
    if (r && r.inFlight > 0) {
      r.inFlight--;
      this.gathers--;
    }
  }

  /** Readers held (for tests: bounded by the readers with a debt or a question in flight). */
  get size(): number {
    return this.readers.size;
  }
}
