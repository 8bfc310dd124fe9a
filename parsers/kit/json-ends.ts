/**
 * Where a JSON value opened at any bracket of one text ends, for many starts at once in one walk.
 *
 * `scanJsonValue(text, j).end` walks from j to the value's end: asked for every marker of a
 * hostile output whose values never close (`commentary to=functions.f json{` a thousand times),
 * that is one walk to the end of the text per marker, quadratic. `JsonEnds` answers the same
 * question for every start in one walk, resumed as later starts are asked for.
 *
 * Why one walk can serve every start: a scan's state at a position is its quote state (outside a
 * string, inside one, or right after a backslash inside one, and the few states of a string
escaped once too often outside any string) and its depth. Two scans in the same
 * quote state at the same position read the rest of the text the same way, their depths moving
 * together. So the walk keeps one lane per quote state, at most eight, each with one depth counter
 * shared by every scan in it; lanes that reach the same state merge. A bracket read outside a
 * string is a start (each scan from it is a new one in that lane, whatever other scans do), kept
 * at the lane's depth; it ends where the lane's depth next falls back to that level. A bracket
 * that every lane reads inside a string starts a new outside lane of its own. Merging moves the
 * smaller lane's open starts into the larger one, so a start moves at most log(n) times.
 *
 * The ends are exactly scanJsonValue's for a '{' or '[' start (strings with backslash escapes,
 * a string escaped once too often outside any string, bracket kinds not matched, depth counted): a property test checks it against scanJsonValue.
 */

import { MAX_NESTING } from './json-scan.js';

const OUT = 0;
const IN = 1;
const ESC = 2;
/**
 * A backslash outside any string (json-scan.ts escapedStringEnd): right after it; inside the
 * `\"…\"` string it opens; after a backslash there; after `\\` there (the next character is
 * escaped too, and one more after it when it is a backslash); that one more.
 */
const OUT_BS = 3;
const EIN = 4;
const EIN_BS = 5;
const EIN_BS2 = 6;
const EIN_SKIP = 7;

interface Lane {
  state: number;
  depth: number;
  /** Open starts by the depth they were opened at (they end when depth falls back to it). */
  open: Map<number, number[]>;
  /** No open start below this depth (where evicting the too-deep ones resumes). */
  low: number;
  count: number;
}

export class JsonEnds {
  /**
   * ends[p - from] for a start at absolute index p: its end (the absolute index after its
   * value), -(i + 2) when it was found too deep on reading absolute index i, or 0 while unknown.
   * Absolute: counted from the first text's start, so a text trimmed at the front and grown at
   * the back (the scanner's buffer, rebase()) keeps every answer and the walk's state.
   */
  private ends: Int32Array;
  private lanes: Lane[] = [];
  /** Absolute index of the walk's first start. */
  private from: number;
  /** Next absolute index to read. */
  private pos: number;

  /**
   * A walk of `text` from its index `from` on; `base` is the absolute index of text[0] (0
   * unless the text is a later state of a trimmed buffer).
   */
  constructor(
    private text: string,
    from: number,
    private base = 0,
  ) {
    this.from = base + from;
    this.pos = this.from;
    // grown as the walk goes: most walks stop a few hundred chars into a long buffer
    this.ends = new Int32Array(Math.min(256, Math.max(0, text.length - from)));
  }

  /**
   * The same text, trimmed at the front (`base` now the absolute index of its first code unit)
   * and grown at the back: everything read so far still holds (an end never moves with more text
   * after it). The caller vouches that `text` is such a later state.
   */
  rebase(text: string, base: number): void {
    this.text = text;
    this.base = base;
    // answers for starts trimmed away are never asked again: drop them once they are most of ends
    const gone = Math.min(base, this.pos) - this.from;
    if (gone > 0 && gone * 2 >= this.ends.length) {
      this.ends.copyWithin(0, gone);
      this.ends.fill(0, this.ends.length - gone);
      this.from += gone;
    }
  }

  /**
   * The end of the JSON object or array opened at `start` (the index after its closing
   * bracket) in text[0, limit); -1 when that text ends first, -2 when the value nests deeper than
   * MAX_NESTING first (not a call, whatever follows); null when text[start] opens neither or
   * `start` is before this walk's first index (ask scanJsonValue then).
   */
  end(start: number, limit = this.text.length): number | null {
    const c = this.text.charCodeAt(start);
    const abs = start + this.base;
    if (abs < this.from || start >= limit || (c !== 0x7b && c !== 0x5b)) return null;
    const k = abs - this.from;
    if (abs >= this.pos) this.walk(abs + 1, -1);
    if (this.ends[k] === 0) this.walk(limit + this.base, k);
    const e = this.ends[k]!;
    if (e > 0) return e - this.base <= limit ? e - this.base : -1;
    // deep: -(where) - 2, decided on reading absolute index `where`
    if (e < 0) return -e - 2 - this.base < limit ? -2 : -1;
    return -1;
  }

  /** Reads up to absolute index `to` (exclusive), or until the start at offset `until` has an answer. */
  private walk(to: number, until: number): void {
    const text = this.text;
    const base = this.base;
    let ends = this.ends;
    while (this.pos < to && (until < 0 || ends[until] === 0)) {
      const i = this.pos++;
      const from = this.from;
      if (i - from >= ends.length) {
        const grown = new Int32Array(Math.max(64, ends.length * 2));
        grown.set(ends);
        this.ends = ends = grown;
      }
      const c = text.charCodeAt(i - base);
      const bracket = c === 0x7b || c === 0x5b;
      let outside = false;
      let changed = false;
      for (const lane of this.lanes) {
        if (lane.state === OUT) {
          outside = true;
          if (c === 0x22 || c === 0x5c) {
            lane.state = c === 0x22 ? IN : OUT_BS;
            changed = true;
          } else if (bracket) {
            push(lane, i);
            if (lane.depth - lane.low > MAX_NESTING) evictDeep(lane, ends, from, i);
          } else if (c === 0x7d || c === 0x5d) {
            lane.depth--;
            const done = lane.open.get(lane.depth);
            if (done !== undefined) {
              for (const p of done) if (p >= from) ends[p - from] = i + 1;
              lane.count -= done.length;
              lane.open.delete(lane.depth);
              changed = true;
            }
          }
        } else if (lane.state === IN) {
          if (c === 0x5c || c === 0x22) {
            lane.state = c === 0x22 ? OUT : ESC;
            changed = true;
          }
        } else if (lane.state === ESC) {
          lane.state = IN;
          changed = true;
        } else if (lane.state !== EIN || c === 0x5c) {
          lane.state = escapedNext(lane.state, c);
          changed = true;
        }
      }
      if (bracket && !outside) {
        this.lanes.push({ state: OUT, depth: 1, open: new Map([[0, [i]]]), low: 0, count: 1 });
        changed = true;
      }
      if (changed) this.tidy();
    }
  }

  /** Drops lanes with nothing open and merges lanes in the same state. */
  private tidy(): void {
    const lanes = this.lanes;
    if (lanes.length === 1) {
      if (lanes[0]!.count === 0) lanes.length = 0;
      return;
    }
    const kept: Lane[] = [];
    for (const lane of lanes) {
      if (lane.count === 0) continue;
      const same = kept.findIndex((k) => k.state === lane.state);
      if (same < 0) kept.push(lane);
      else kept[same] = merge(kept[same]!, lane);
    }
    this.lanes = kept;
  }
}

/** The state after reading c in one of the escaped-string states (scanFrom's escapedStringEnd). */
function escapedNext(state: number, c: number): number {
  switch (state) {
    case OUT_BS:
      return c === 0x22 ? EIN : OUT;
    case EIN:
      return c === 0x5c ? EIN_BS : EIN;
    case EIN_BS:
      return c === 0x22 ? OUT : c === 0x5c ? EIN_BS2 : EIN;
    case EIN_BS2:
      return c === 0x5c ? EIN_SKIP : EIN;
    default:
      return EIN;
  }
}

/** A start at `p` in `lane`, at the lane's depth, which goes one deeper. */
function push(lane: Lane, p: number): void {
  if (lane.depth < lane.low) lane.low = lane.depth;
  const at = lane.open.get(lane.depth);
  if (at === undefined) lane.open.set(lane.depth, [p]);
  else at.push(p);
  lane.count++;
  lane.depth++;
}

/** Starts now nested deeper than MAX_NESTING inside their own value: marked, never read again. */
function evictDeep(lane: Lane, ends: Int32Array, from: number, at: number): void {
  const floor = lane.depth - MAX_NESTING;
  for (let d = lane.low; d < floor; d++) {
    const starts = lane.open.get(d);
    if (starts === undefined) continue;
    for (const p of starts) if (p >= from) ends[p - from] = -at - 2;
    lane.count -= starts.length;
    lane.open.delete(d);
  }
  lane.low = floor;
}

/** One lane from two in the same state: the smaller's open starts moved to the larger's depths. */
function merge(a: Lane, b: Lane): Lane {
  const [big, small] = a.count >= b.count ? [a, b] : [b, a];
  const shift = big.depth - small.depth;
  for (const [depth, starts] of small.open) {
    const at = big.open.get(depth + shift);
    if (at === undefined) big.open.set(depth + shift, starts);
    else for (const p of starts) at.push(p);
  }
  big.count += small.count;
  big.low = Math.min(big.low, small.low + shift);
  return big;
}
