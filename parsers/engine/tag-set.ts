/**
 * A fixed set of literal tags searched as one, for the reasoning closes that are looked for in
 * every streamed chunk (think-split.ts, bare-think.ts): one regex pass, which irregexp runs
 * natively, instead of one indexOf per tag; and the tag cut by the end of a buffer found
 * without slicing the buffer once per tag and length.
 */

/** `s` as a regex source that matches it literally (no 'u' flag). */
export function escapeLiteral(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

export class TagSet {
  /** Distinct, non-empty, longest first. */
  readonly tags: readonly string[];
  readonly longest: number;
  /** All tags as alternatives, longest first: at one index the longer wins. null: one tag. */
  private readonly re: RegExp | null;
  /** The tags' distinct first chars. */
  private readonly firsts: readonly string[];

  constructor(tags: readonly string[]) {
    this.tags = [...new Set(tags)].filter((t) => t !== '').sort((a, b) => b.length - a.length);
    this.longest = Math.max(0, ...this.tags.map((t) => t.length));
    this.re = this.tags.length > 1 ? new RegExp(this.tags.map(escapeLiteral).join('|'), 'g') : null;
    this.firsts = [...new Set(this.tags.map((t) => t[0] ?? ''))];
  }

  /** The first tag in `text` (at the same index the longer wins): its index and length. */
  first(text: string): { at: number; len: number } | null {
    if (this.re === null) {
      const tag = this.tags[0];
      const at = tag === undefined ? -1 : text.indexOf(tag);
      return at < 0 || tag === undefined ? null : { at, len: tag.length };
    }
    this.re.lastIndex = 0;
    const m = this.re.exec(text);
    return m === null ? null : { at: m.index, len: m[0].length };
  }

  /** Whether `text` holds a char some tag starts with (no tag can start in it otherwise). */
  anyStart(text: string): boolean {
    for (const c of this.firsts) if (text.includes(c)) return true;
    return false;
  }

  /** The longest k such that `buf` ends with the first k chars of a tag (k < its length). */
  partialTail(buf: string): number {
    let from = Math.max(0, buf.length - this.longest + 1);
    while (from < buf.length) {
      // the next place a tag could start (the reasoning closes start with '<' or '[', which
      // most prose chunks do not hold: a couple of native searches, no per-char loop)
      let p = -1;
      for (const c of this.firsts) {
        const k = buf.indexOf(c, from);
        if (k >= 0 && (p < 0 || k < p)) p = k;
      }
      if (p < 0) return 0;
      const rest = buf.slice(p);
      for (const t of this.tags) if (t.length > rest.length && t.startsWith(rest)) return rest.length;
      from = p + 1;
    }
    return 0;
  }
}
