/**
 * Tool names on the `tool` label of toolproof_argument_validation_failures_total. The client
 * writes the names, so a name keeps its own label only once it is known to be a real tool: a call
 * to it reached a client and passed the checks (arguments valid, or not validated) at least once.
 * Names that only ever fail, junk declared by the hundreds included, take no slot and cannot push
 * a real tool into "other". Bounded: at most `cap` names, the first to pass.
 */
export class ToolLabels {
  private readonly known = new Set<string>();
  constructor(private readonly cap = 200) {}

  label(name: string): string {
    return this.known.has(name) ? name : 'other';
  }

  /** Calls of these names went out to a client, checked. */
  passed(names: Iterable<string>): void {
    for (const name of names) {
      if (this.known.size >= this.cap) return;
      if (name.length > 0 && name.length <= 64) this.known.add(name);
    }
  }
}
