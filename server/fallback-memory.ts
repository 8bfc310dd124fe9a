/**
 * Remembers, per upstream and model, that tool_choice "required" was rejected, so later
 * requests go straight to "auto" without paying a failed round trip. Entries expire after a
 * TTL (the backend may be upgraded or restarted with other flags).
 */
export class FallbackMemory {
  private readonly until = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}

  private key(upstream: string, model: string): string {
    return `${upstream}\u0000${model}`;
  }

  remember(upstream: string, model: string, ttlSeconds: number): void {
    this.until.set(this.key(upstream, model), this.now() + ttlSeconds * 1000);
  }

  isActive(upstream: string, model: string): boolean {
    const k = this.key(upstream, model);
    const t = this.until.get(k);
    if (t === undefined) return false;
    if (t <= this.now()) {
      this.until.delete(k);
      return false;
    }
    return true;
  }

  /** [upstream, model] pairs currently remembered (for the metrics gauge). */
  active(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const k of [...this.until.keys()]) {
      const [u, m] = k.split('\u0000') as [string, string];
      if (this.isActive(u, m)) out.push([u, m]);
    }
    return out;
  }
}
