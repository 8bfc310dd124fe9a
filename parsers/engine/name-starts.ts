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
  /**
   * The name in any case of its ASCII letters (`READ_FILE(` for read_file): the reader decides
   * whether that spelling means the tool (structured-reader.ts); this only holds the output.
   */
  foldCase?: boolean;
}

export type StartVerdict = 'yes' | 'prefix' | 'no';

interface Catalogue {
  /** Non-empty declared names in code-unit order. */
  names: string[];
  longest: number;
}

const CATALOGUES = new WeakMap<ReadonlyMap<string, unknown>, Catalogue>();
/** The same with every name's ASCII letters in lower case, each folded name once. */
const FOLDED_CATALOGUES = new WeakMap<ReadonlyMap<string, unknown>, Catalogue>();

/** A code unit with an ASCII capital letter lowered. */
const lowerAscii = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 0x20 : c);
const foldAscii = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/** The catalogue of `tools` (sorted once per map: the memo is invisible in results). */
function catalogueOf(tools: ReadonlyMap<string, unknown>, folded = false): Catalogue {
  const memo = folded ? FOLDED_CATALOGUES : CATALOGUES;
  let c = memo.get(tools);
  if (c === undefined) {
    const names: string[] = [];
    let longest = 0;
    for (const n of tools.keys()) {
      if (n === '') continue;
      names.push(folded ? foldAscii(n) : n);
      if (n.length > longest) longest = n.length;
    }
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // a range narrows by one code unit per step: a name twice would stay in it past its end
    c = { names: folded ? names.filter((n, i) => i === 0 || n !== names[i - 1]) : names, longest };
    memo.set(tools, c);
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
    /** Compare the output's code units with ASCII capitals lowered (the names are folded). */
    readonly fold: boolean,
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
      const c = this.fold
        ? lowerAscii(rest.charCodeAt(from + this.depth))
        : rest.charCodeAt(from + this.depth);
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
  private foldedNames: readonly string[] | undefined;
  /** The longest start this matcher can see: what the caller must pass of the output. */
  readonly longest: number;

  constructor(
    private readonly tools: ReadonlyMap<string, unknown>,
    frames: readonly NameFrame[],
  ) {
    // frames with the same `before` (and case rule) share one range
    const byBefore = new Map<string, { before: string; fold: boolean; after: Set<string> }>();
    for (const f of frames) {
      const fold = f.foldCase === true;
      const key = `${fold ? 'i' : 's'}${f.before}`;
      const g = byBefore.get(key) ?? { before: f.before, fold, after: new Set<string>() };
      for (const a of f.after) g.after.add(a);
      byBefore.set(key, g);
    }
    this.frames = [...byBefore.values()].map(({ before, fold, after }) => {
      const list = [...after];
      return new FrameState(before, list, Math.max(0, ...list.map((a) => a.length)), fold);
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
      const names = f.fold
        ? (this.foldedNames ??= catalogueOf(this.tools, true).names)
        : (this.names ??= catalogueOf(this.tools).names);
      const v = f.verdict(names, rest);
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
