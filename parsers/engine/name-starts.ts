/**
 * Whole-output starts made of a declared tool's name (improvised: `get_weather(`, `<get_weather>`,
 * `[get_weather]`, `<|python_tag|>get_weather`): the output is held to the end when it opens with
 * `before + name + after` for a declared name and one of the frame's `after`s.
 *
 * These used to be spelled out, 11 strings per declared tool, per choice and per attempt, then
 * compared one by one on every push: 4,096 tools with 4,000-character names and n: 32 ran the
 * process out of heap (4.2 GB), and a shared name prefix made the first push's decision
 * quadratic (issue 27). Now nothing is spelled: the request's names are sorted once per tool
 * catalogue (shared by every choice and attempt of the request, WeakMap on the tools map, built
 * on the first output that could start with a name), and each stream narrows a range over them
 * one new character at a time (a binary search per character and frame), so deciding costs
 * O(log tools) per character of the output's first line, and a stream holds a few numbers.
 */

/** Fixed text around a declared name: `before + name + one of after`. */
export interface NameFrame {
  before: string;
  after: readonly string[];
}

export type StartVerdict = 'yes' | 'prefix' | 'no';

interface Catalogue {
  /** Non-empty declared names in code-unit order. */
  names: string[];
  longest: number;
}

const CATALOGUES = new WeakMap<ReadonlyMap<string, unknown>, Catalogue>();

/** The catalogue of `tools` (sorted once per map: the memo is invisible in results). */
function catalogueOf(tools: ReadonlyMap<string, unknown>): Catalogue {
  let c = CATALOGUES.get(tools);
  if (c === undefined) {
    const names: string[] = [];
    let longest = 0;
    for (const n of tools.keys()) {
      if (n === '') continue;
      names.push(n);
      if (n.length > longest) longest = n.length;
    }
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    c = { names, longest };
    CATALOGUES.set(tools, c);
  }
  return c;
}

/**
 * Does some declared name start with code unit `c`? A binary search in the sorted catalogue
 * (sorted once per tools map, shared with every matcher of the request), not a walk of the names.
 */
export function someNameStartsWith(tools: ReadonlyMap<string, unknown>, c: number): boolean {
  if (tools.size === 0) return false;
  const { names } = catalogueOf(tools);
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((names[mid] as string).charCodeAt(0) < c) lo = mid + 1;
    else hi = mid;
  }
  return lo < names.length && (names[lo] as string).charCodeAt(0) === c;
}

/** The longest declared name (0: none), without sorting anything. */
export function longestName(tools: ReadonlyMap<string, unknown>): number {
  const known = CATALOGUES.get(tools);
  if (known) return known.longest;
  let longest = 0;
  for (const n of tools.keys()) if (n.length > longest) longest = n.length;
  return longest;
}

/** First k in [lo, hi) with names[k].charCodeAt(d) >= c (or > c when `after`). */
function bound(
  names: readonly string[],
  lo: number,
  hi: number,
  d: number,
  c: number,
  after: boolean,
): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const m = names[mid]!.charCodeAt(d);
    if (m < c || (after && m === c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** One frame's reading of the text after its `before`: which names it may still begin. */
class FrameState {
  /** names[lo, hi) all start with the text's first `depth` code units. */
  lo = 0;
  hi = -1;
  depth = 0;
  /** Whether names[lo] was compared for being exactly the first `depth` code units. */
  endChecked = false;
  /** Offsets p in the text where text[0, p) is a declared name whose `after` may still follow. */
  ends: number[] = [];

  constructor(
    readonly before: string,
    readonly after: readonly string[],
    readonly longestAfter: number,
  ) {}

  verdict(names: readonly string[], rest: string): StartVerdict {
    const b = this.before;
    if (rest.length < b.length) return b.startsWith(rest) ? 'prefix' : 'no';
    if (!rest.startsWith(b)) return 'no';
    if (this.hi < 0) this.hi = names.length;
    const from = b.length;
    const len = rest.length - from;
    // narrow the range by each new character (the text only grows between calls)
    for (;;) {
      if (!this.endChecked) {
        this.endChecked = true;
        if (this.lo < this.hi && names[this.lo]!.length === this.depth) {
          this.ends.push(this.depth);
          this.lo++;
        }
      }
      if (this.depth >= len || this.lo >= this.hi) break;
      const c = rest.charCodeAt(from + this.depth);
      const lo = bound(names, this.lo, this.hi, this.depth, c, false);
      this.hi = bound(names, lo, this.hi, this.depth, c, true);
      this.lo = lo;
      this.depth++;
      this.endChecked = false;
    }
    let prefix = this.lo < this.hi && this.depth === len;
    const live: number[] = [];
    for (const p of this.ends) {
      for (const a of this.after) {
        if (len - p >= a.length) {
          if (rest.startsWith(a, from + p)) return 'yes';
        } else if (a.startsWith(rest.slice(from + p))) prefix = true;
      }
      // a name end whose every `after` can still be told apart stays
      if (len - p < this.longestAfter) live.push(p);
    }
    this.ends = live;
    return prefix ? 'prefix' : 'no';
  }
}

/**
 * Decides, for an output that only grows, whether it opens with a framed declared name. One per
 * stream; the sorted names are shared through the tools map.
 */
export class NameStartMatcher {
  private readonly frames: FrameState[];
  private names: readonly string[] | undefined;
  /** The longest start this matcher can see: what the caller must pass of the output. */
  readonly longest: number;

  constructor(
    private readonly tools: ReadonlyMap<string, unknown>,
    frames: readonly NameFrame[],
  ) {
    // frames with the same `before` share one range
    const byBefore = new Map<string, Set<string>>();
    for (const f of frames) {
      const set = byBefore.get(f.before) ?? new Set<string>();
      for (const a of f.after) set.add(a);
      byBefore.set(f.before, set);
    }
    this.frames = [...byBefore].map(([before, after]) => {
      const list = [...after];
      return new FrameState(before, list, Math.max(0, ...list.map((a) => a.length)));
    });
    const longestName = longestNameOf(tools);
    this.longest =
      longestName === 0
        ? 0
        : Math.max(0, ...this.frames.map((f) => f.before.length + longestName + f.longestAfter));
  }

  /** 'yes' when `rest` opens with a framed name, 'prefix' while it may still, else 'no'. */
  verdict(rest: string): StartVerdict {
    if (this.longest === 0) return 'no';
    let prefix = false;
    for (const f of this.frames) {
      // the names are sorted only once some output could begin one
      if (rest.length <= f.before.length) {
        if (f.before.startsWith(rest)) prefix = true;
        continue;
      }
      if (!rest.startsWith(f.before)) continue;
      this.names ??= catalogueOf(this.tools).names;
      const v = f.verdict(this.names, rest);
      if (v === 'yes') return 'yes';
      if (v === 'prefix') prefix = true;
    }
    return prefix ? 'prefix' : 'no';
  }
}

const longestNameOf = longestName;

/** Whether `text` opens with a framed declared name (a one-off check of a complete text). */
export function startsWithFramedName(
  tools: ReadonlyMap<string, unknown>,
  frames: readonly NameFrame[],
  text: string,
): boolean {
  const m = new NameStartMatcher(tools, frames);
  return m.verdict(text.slice(0, m.longest)) === 'yes';
}
