/**
 * A slot model of one GPU server (`slots` option): N sequences decode at once (llama-server's
 * `-np`, vLLM's `--max-num-seqs`), later requests wait in a FIFO, a request's uncached prompt
 * costs `prefillMsPerToken` each before its first token, and each streamed chunk (about a token)
 * `msPerToken`. Enough to show contention: who waits behind whom, and for how long.
 */
export interface SlotOptions {
  count: number;
  /** Time per prompt token not served from the prefix cache. Default 0. */
  prefillMsPerToken?: number;
  /** Time per generated chunk. Default 0. */
  msPerToken?: number;
}

export class Slots {
  private busy = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly options: SlotOptions) {}

  /** Resolves with the release function once a slot is free (FIFO). */
  acquire(): Promise<() => void> {
    return new Promise((resolve) => {
      const grant = () => {
        this.busy++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.busy--;
          this.waiting.shift()?.();
        });
      };
      if (this.busy < this.options.count) grant();
      else this.waiting.push(grant);
    });
  }

  /** Waiting requests that gave up (their client left) are granted and released at once by the caller. */
  get load(): { busy: number; waiting: number } {
    return { busy: this.busy, waiting: this.waiting.length };
  }
}
