/**
 * The incremental envelope scanner: one pass with a carry buffer. Used for BOTH the
 * non-streaming path (push everything, finish) and the streaming path, which is what makes
 * them equal for any chunking.
 *
 * Hazards handled here:
 * - a marker split across chunks: the shortest tail that could start a marker is held back;
 * - an envelope still arriving: the family answers 'need-more'; a small one is re-asked on each
 *   push, a large one only after the buffer grew geometrically, so a 1 MB envelope in 8-char
 *   chunks stays linear overall;
 * - whole-output formats: when the output starts like one ('{', '[', '```'), everything is held
 *   to the end and offered to matchWhole before the marker scan;
 * - held text is capped (maxHeld, code units): an output held for matchWhole that grows past
 *   the cap, or an envelope still open that long after its marker, is released as text (a
 *   'too-long' event; the envelope keeps only its marker, like any broken one). The decision
 *   depends on the text only (a family sees at most maxHeld chars after its marker, and a
 *   whole output longer than that is never whole), so every split decides the same.
 */
import { pushAll } from '../../protocol/append-all.js';
import { DEFAULT_MAX_HELD_BYTES } from '../../protocol/settings.js';
import type { EnvelopeMatch, FamilyParser } from './family.js';
import { JsonEnds } from '../kit/json-ends.js';
import { scanJsonValue, skipWs } from '../kit/json-scan.js';
import type { ParseContext } from '../types.js';
import { NameStartMatcher, startsWithFramedName } from './name-starts.js';
import { matchRepeated, RestartMemo } from './repeated-envelope.js';
import { escapeLiteral } from './tag-set.js';
import { collectThinkMarkers, type ThinkMarkers } from './think-split.js';

export type ScanEvent =
  | { type: 'text'; text: string }
  | { type: 'envelope'; family: FamilyParser; match: EnvelopeMatch; raw: string }
  /** A whole output held for `family` passed the cap: it is scanned as text from here. */
  | { type: 'too-long'; family: FamilyParser };

interface MarkerEntry {
  marker: string;
  /** Families owning this marker, by priority. */
  families: FamilyParser[];
}

/** Pre-computed lookup over the enabled families; build once per parser set. */
export interface ScanPlan {
  families: readonly FamilyParser[];
  /** Markers by their first code unit (partial markers at the buffer's tail). */
  byFirst: Map<number, MarkerEntry[]>;
  /** Markers by their first two code units (the hot path: one Map lookup per candidate char). */
  byFirstTwo: Map<number, MarkerEntry[]>;
  /**
   * Where a marker may start: each marker as a literal alternative, except that a char which is
   * itself a marker stands in a class for all markers starting with it (see buildScanPlan).
   */
  starts: RegExp;
  /** 1 at the first code unit of each literal alternative (indexed by code unit). */
  literalFirst: Uint8Array;
  /** Length of the longest literal alternative (0: none): how far back a cut one can start. */
  longestLiteral: number;
  wholeStarts: string[];
  wholeFamilies: FamilyParser[];
  /** Some whole family reads outputs that open with an XML-ish tag no family has as a marker. */
  wholeTags: boolean;
  /** Every family's markers (what a generic opening tag must not be). */
  markers: readonly string[];
  /** Reasoning markers of these families plus `<think>` (think-split.ts, bare-think.ts). */
  think: ThinkMarkers;
}

function twoKey(s: string, i: number): number {
  return s.charCodeAt(i) * 0x10000 + s.charCodeAt(i + 1);
}

function escapeClass(ch: string): string {
  return /[\\\]^-]/.test(ch) ? `\\${ch}` : ch;
}

export function buildScanPlan(families: readonly FamilyParser[]): ScanPlan {
  const sorted = [...families].sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name));
  const byMarker = new Map<string, FamilyParser[]>();
  for (const f of sorted) {
    if (!f.spec.match) continue;
    for (const m of f.spec.markers) {
      if (m === '') continue;
      const list = byMarker.get(m) ?? [];
      list.push(f);
      byMarker.set(m, list);
    }
  }
  const byFirst = new Map<number, MarkerEntry[]>();
  for (const [marker, fams] of byMarker) {
    const c = marker.charCodeAt(0);
    const list = byFirst.get(c) ?? [];
    list.push({ marker, families: fams });
    byFirst.set(c, list);
  }
  // longest first, so a marker that extends another is tried first at the same position
  for (const list of byFirst.values()) list.sort((a, b) => b.marker.length - a.marker.length);
  const byFirstTwo = new Map<number, MarkerEntry[]>();
  for (const list of byFirst.values()) {
    for (const e of list) {
      const key = e.marker.length === 1 ? -1 - e.marker.charCodeAt(0) : twoKey(e.marker, 0);
      const l = byFirstTwo.get(key) ?? [];
      l.push(e);
      byFirstTwo.set(key, l);
    }
  }
  // Every marker is a literal alternative of one regex, which irregexp checks natively: a
  // first char common in prose (' ' of " to=", '\n' of "\ncall:", 'A' of "Action:", '<' in
  // HTML or code) costs no call into tryAt per occurrence, only a real marker does. A char
  // that is itself a marker ('[' of pythonic) goes in a class with its longer markers, which
  // tryAt sorts out by their first two chars.
  const firsts = [...byFirst];
  const inClass = firsts.filter(([, l]) => l.some((e) => e.marker.length === 1));
  const literalLists = firsts.filter((entry) => !inClass.includes(entry));
  const literals = literalLists.flatMap(([, l]) => l.map((e) => e.marker));
  const literalFirst = new Uint8Array(Math.max(0, ...literalLists.map(([c]) => c + 1)));
  for (const [c] of literalLists) literalFirst[c] = 1;
  const chars = inClass.map(([c]) => escapeClass(String.fromCharCode(c))).join('');
  const alternatives = [...(chars === '' ? [] : [`[${chars}]`]), ...literals.map(escapeLiteral)];
  const wholeFamilies = sorted.filter(
    (f) => f.spec.matchWhole && ((f.spec.wholeStarts?.length ?? 0) > 0 || f.spec.wholeNameStarts),
  );
  return {
    families: sorted,
    byFirst,
    byFirstTwo,
    starts: new RegExp(alternatives.length === 0 ? '[^\\s\\S]' : alternatives.join('|'), 'g'),
    literalFirst,
    longestLiteral: Math.max(0, ...literals.map((m) => m.length)),
    wholeStarts: [...new Set(wholeFamilies.flatMap((f) => f.spec.wholeStarts ?? []))],
    wholeFamilies,
    wholeTags: wholeFamilies.some((f) => f.spec.wholeStartsTag === true),
    markers: [...new Set(sorted.flatMap((f) => f.markers))],
    think: collectThinkMarkers(sorted),
  };
}

type Mode = 'start' | 'hold' | 'scan';

/**
 * Does the output open with an XML-ish tag (`<name>`, `<name attr=…`, `<name/>`) that is no
 * family's marker (those are scanned, and stream, as they always did)? 'maybe' while the text
 * so far cannot tell; `full`: the window is all there is to see (a longer name is no tag).
 */
function openingTag(
  rest: string,
  markers: readonly string[],
  full: boolean,
  scanned: { j: number },
): 'yes' | 'no' | 'maybe' {
  if (rest[0] !== '<') return 'no';
  // the name is walked once: `scanned.j` is where the last call (on a shorter rest) stopped, so
  // a long name arriving in small pieces is not walked again per piece (quadratic, issue 27)
  let j = Math.max(1, scanned.j);
  // a namespaced tag (`<atem:…>`) belongs to a format with its own header rules: not generic
  while (j < rest.length && /[A-Za-z0-9_.-]/.test(rest[j] as string)) j++;
  scanned.j = j;
  if (j === 1) return rest.length === 1 ? 'maybe' : 'no';
  if (!/[A-Za-z_]/.test(rest[1] as string)) return 'no';
  if (j === rest.length) return full ? 'no' : 'maybe';
  if (!/[\s>/]/.test(rest[j] as string)) return 'no';
  const head = rest.slice(0, j + 1);
  return markers.some((m) => m.startsWith(head) || head.startsWith(m)) ? 'no' : 'yes';
}

/**
 * After this many broken envelopes from one family in one message, its markers are plain text.
 * A broken envelope consumes only its marker and the text after it is scanned again; without a
 * cap, garbage made of repeated markers would cost (markers x text) work.
 */
const MAX_BROKEN_PER_FAMILY = 32;

/** Envelopes still arriving are re-parsed on every push while smaller than this (chars). */
const RETRY_EVERY_PUSH = 2048;

/** Default cap on text held for a possible envelope or whole output (code units). */
export const DEFAULT_MAX_HELD = DEFAULT_MAX_HELD_BYTES;

/** Code units kept before the scan position when the buffer is trimmed (see MatchInput.text). */
const LOOKBEHIND = 1;

/** The error a too-long envelope is refused with (also the leak record's reason). */
export const TOO_LONG = 'too-long';

export class EnvelopeScanner {
  private buf = '';
  private pos = 0;
  private mode: Mode;
  /** While an envelope answered 'need-more': do not ask again before the buffer reaches this length. */
  private retryAt = 0;
  private done = false;
  /** Characters dropped from the front of buf (find() memo works in absolute offsets). */
  private base = 0;
  private readonly findMemo = new Map<string, { from: number; found: number; scannedTo: number }>();
  /**
   * jsonEnd()'s walk, over the whole output in absolute offsets (like find's memo): an envelope
   * re-asked on every push is not walked again from its marker each time.
   */
  private ends: JsonEnds | null = null;
  private readonly broken = new Map<FamilyParser, number>();
  /** In 'start' mode: buf[0..startWs) is known whitespace (a blank run is walked once, not per push). */
  private startWs = 0;
  /** In 'start' mode: how far openingTag has read the output's opening tag name. */
  private readonly tagScan = { j: 1 };
  /** A restart's reading of the next envelope, for this pass only (repeated-envelope.ts). */
  private readonly restarts = new RestartMemo();
  /** pos is where the last scan stopped on a 'hold' (a marker there, cut or still arriving). */
  private heldAtPos = false;

  private readonly maxHeld: number;
  /** Whole-output starts for this message: the plan's fixed ones. */
  private readonly starts: Array<{ start: string; family: FamilyParser }>;
  /** The request-dependent ones: a declared name in a frame (name-starts.ts), never spelled out. */
  private readonly nameStarts: Array<{ matcher: NameStartMatcher; family: FamilyParser }>;
  private readonly longestStart: number;

  constructor(
    private readonly plan: ScanPlan,
    private readonly ctx: ParseContext,
    opts: { whole?: boolean; maxHeld?: number } = {},
  ) {
    this.mode = plan.wholeFamilies.length > 0 && opts.whole !== false ? 'start' : 'scan';
    this.maxHeld = Math.max(1, opts.maxHeld ?? DEFAULT_MAX_HELD);
    this.starts = [];
    this.nameStarts = [];
    let longest = 16;
    if (this.mode === 'start') {
      for (const f of plan.wholeFamilies) {
        for (const start of f.spec.wholeStarts ?? []) {
          if (start !== '') this.starts.push({ start, family: f });
          longest = Math.max(longest, start.length);
        }
        if (f.spec.wholeNameStarts && f.spec.wholeNameStarts.length > 0 && ctx.tools.size > 0) {
          const matcher = new NameStartMatcher(ctx.tools, f.spec.wholeNameStarts);
          this.nameStarts.push({ matcher, family: f });
          longest = Math.max(longest, matcher.longest);
        }
      }
    }
    this.longestStart = longest;
  }

  push(text: string): ScanEvent[] {
    if (this.done) throw new Error('scanner finished');
    if (
      this.mode === 'start' &&
      this.startWs === this.buf.length &&
      this.buf.length + text.length <= this.maxHeld &&
      skipWs(text, 0) === text.length
    ) {
      // leading blank run: append without reading buf (see ThinkSplitter.push)
      this.buf += text;
      this.startWs = this.buf.length;
      return [];
    }
    this.buf += text;
    return this.run(false);
  }

  finish(): ScanEvent[] {
    const out = this.run(true);
    this.done = true;
    return out;
  }

  private run(final: boolean): ScanEvent[] {
    const out: ScanEvent[] = [];
    this.restarts.clear();
    if (this.mode === 'start') this.decideStart(final);
    if (this.mode === 'hold' && this.buf.length > this.maxHeld) {
      // held past the cap: never a whole output (the same for every split, since it only
      // depends on the total length); release it to the marker scan
      const family = this.wholeFamilyFor();
      if (family) out.push({ type: 'too-long', family });
      this.mode = 'scan';
    }
    let scanned = false;
    if (this.mode === 'hold') {
      if (!final) return out;
      const whole = this.tryWhole(false);
      if (whole) {
        out.push(whole);
        this.ends = null;
        this.buf = '';
        this.pos = 0;
        return out;
      }
      this.mode = 'scan';
      if (this.plan.wholeFamilies.some((f) => f.spec.lastResort)) {
        // a last-resort reader (improvised) gets the whole output only when the families'
        // envelopes do not read all of it as calls: a standard shape is always read by its own
        // family, and a whole output that is calls is never read as half calls, half text
        const events: ScanEvent[] = [];
        this.scan(true, events);
        scanned = true;
        const allCalls =
          events.some((e) => e.type === 'envelope' && e.match.calls.length > 0) &&
          events.every((e) => e.type !== 'text' || skipWs(e.text, 0) === e.text.length);
        const last = allCalls ? null : this.tryWhole(true);
        if (last) {
          out.push(last);
          this.ends = null;
          this.buf = '';
          this.pos = 0;
          return out;
        }
        pushAll(out, events);
      }
    }
    if (this.mode === 'scan' && !scanned) this.scan(final, out);
    if (this.pos > LOOKBEHIND) {
      // keep the code unit before pos: a family may read text[start - 1] (pythonic's list
      // after prose), which must be the output's own character for every split, and
      // start === 0 must mean the start of the output, not of the buffer
      const drop = this.pos - LOOKBEHIND;
      this.base += drop;
      this.buf = this.buf.slice(drop);
      this.retryAt = Math.max(0, this.retryAt - drop);
      this.pos = LOOKBEHIND;
    }
    return out;
  }

  private decideStart(final: boolean): void {
    const i = skipWs(this.buf, this.startWs);
    this.startWs = i;
    if (i > this.maxHeld) {
      // a blank run longer than the cap before anything else: not a whole output
      this.mode = 'scan';
      return;
    }
    if (i === this.buf.length) {
      if (final) this.mode = 'scan';
      return;
    }
    const rest = this.buf.slice(i, i + this.longestStart);
    let prefixOnly = false;
    for (const { start: s } of this.starts) {
      if (rest.startsWith(s)) {
        this.mode = 'hold';
        return;
      }
      if (s.startsWith(rest)) prefixOnly = true;
    }
    for (const { matcher } of this.nameStarts) {
      const v = matcher.verdict(rest);
      if (v === 'yes') {
        this.mode = 'hold';
        return;
      }
      if (v === 'prefix') prefixOnly = true;
    }
    if (this.plan.wholeTags) {
      const tag = openingTag(rest, this.plan.markers, rest.length >= this.longestStart, this.tagScan);
      if (tag === 'yes') {
        this.mode = 'hold';
        return;
      }
      if (tag === 'maybe') prefixOnly = true;
    }
    this.mode = prefixOnly && !final ? 'start' : 'scan';
  }

  /** The first whole family (by priority) whose start the held output has. */
  private wholeFamilyFor(): FamilyParser | undefined {
    const i = skipWs(this.buf, 0);
    for (const f of this.plan.wholeFamilies) {
      if (this.starts.some((s) => s.family === f && this.buf.startsWith(s.start, i))) return f;
      const names = this.nameStarts.find((n) => n.family === f);
      if (names && startsWithFramedName(this.ctx.tools, f.spec.wholeNameStarts ?? [], this.buf.slice(i)))
        return f;
    }
    return undefined;
  }

  private tryWhole(lastResort: boolean): ScanEvent | null {
    for (const f of this.plan.wholeFamilies) {
      if ((f.spec.lastResort === true) !== lastResort) continue;
      const m = f.spec.matchWhole?.(this.buf, this.ctx);
      // text a whole match keeps as content after its calls must not hide a reasoning close:
      // the calls before a bare </think> are drafts (bare-think.ts), so the marker scan decides
      if (m?.content !== undefined && this.plan.think.closeSet.first(m.content) !== null) continue;
      if (m) return { type: 'envelope', family: f, match: { ...m, end: this.buf.length }, raw: this.buf };
    }
    return null;
  }

  private scan(final: boolean, out: ScanEvent[]): void {
    const buf = this.buf;
    if (this.retryAt > buf.length && !final) return;
    const re = this.plan.starts;
    // a literal marker cut by the end of the buffer is not a regex hit: look for one in the
    // last (longestLiteral - 1) chars before going past them
    const tail = final ? buf.length : buf.length - this.plan.longestLiteral + 1;
    let textStart = this.pos;
    let i = this.pos;
    // after a hold, tryAt is asked at pos again first, without the regex: an envelope still
    // arriving is re-tried on every push, and the regex would walk its alternatives to find the
    // same position (tryAt answers there as a hit or a cut literal would: hold, null, or a match)
    let again = this.heldAtPos;
    this.heldAtPos = false;
    for (;;) {
      let at = i;
      let hit = again;
      if (!again) {
        re.lastIndex = i;
        const m = re.exec(buf);
        hit = m !== null;
        at = m === null ? buf.length : m.index;
      }
      again = false;
      if (at > tail && at > i) {
        const cut = this.cutLiteral(Math.max(i, tail), at);
        if (cut >= 0) {
          if (cut > textStart) out.push({ type: 'text', text: buf.slice(textStart, cut) });
          this.pos = cut;
          this.heldAtPos = true;
          return;
        }
      }
      if (!hit) break;
      i = at;
      const r = this.tryAt(i, final);
      if (r === 'hold') {
        if (i > textStart) out.push({ type: 'text', text: buf.slice(textStart, i) });
        this.pos = i;
        this.heldAtPos = true;
        return;
      }
      if (r === null) {
        i++;
        continue;
      }
      if (i > textStart) out.push({ type: 'text', text: buf.slice(textStart, i) });
      out.push(r);
      i = r.match.end;
      textStart = i;
      this.retryAt = 0;
    }
    if (buf.length > textStart) out.push({ type: 'text', text: buf.slice(textStart) });
    this.pos = buf.length;
  }

  /**
   * The first i in [from, to) where the rest of the buffer is a proper prefix of a literal
   * marker (one that may still complete in the next push), or -1: what tryAt answers 'hold'
   * for at a class char, since a literal is no regex hit until all of it is there.
   */
  private cutLiteral(from: number, to: number): number {
    const buf = this.buf;
    const first = this.plan.literalFirst;
    for (let i = from; i < to; i++) {
      if (first[buf.charCodeAt(i)] !== 1) continue;
      const rest = buf.length - i;
      const entries =
        rest === 1 ? this.plan.byFirst.get(buf.charCodeAt(i)) : this.plan.byFirstTwo.get(twoKey(buf, i));
      if (!entries) continue;
      const tail = buf.slice(i);
      for (const e of entries) if (e.marker.length > rest && e.marker.startsWith(tail)) return i;
    }
    return -1;
  }

  private readonly find = (lit: string, from: number): number => {
    const buf = this.buf;
    const absFrom = from + this.base;
    const memo = this.findMemo.get(lit);
    let searchFrom = from;
    if (memo && memo.from <= absFrom) {
      if (memo.found >= absFrom) return memo.found - this.base;
      if (memo.found === -1) searchFrom = Math.max(from, memo.scannedTo - this.base - lit.length + 1);
    }
    const r = buf.indexOf(lit, searchFrom);
    const keepFrom = memo && memo.from <= absFrom && memo.found === -1 ? memo.from : absFrom;
    this.findMemo.set(lit, {
      from: keepFrom,
      found: r < 0 ? -1 : r + this.base,
      scannedTo: buf.length + this.base,
    });
    return r;
  };

  /** The end of the JSON value at `from` in buf[0, limit) (MatchInput.jsonEnd). */
  private jsonEnd(from: number, limit: number): number {
    if (this.ends === null) this.ends = new JsonEnds(this.buf, from, this.base);
    else this.ends.rebase(this.buf, this.base);
    const e = this.ends.end(from, limit);
    if (e !== null) return e;
    // before the walk's first index, or not a bracket: one scan of its own
    const scan = scanJsonValue(this.buf.slice(0, limit), from);
    return scan === null ? -1 : scan.end;
  }

  /** An envelope at i, null (plain text here), or 'hold' (partial marker or need-more). */
  private tryAt(i: number, final: boolean): Extract<ScanEvent, { type: 'envelope' }> | null | 'hold' {
    const buf = this.buf;
    const avail = buf.length - i;
    if (avail === 1) {
      // one char left: it can only be the start of a marker still arriving
      if (!final && this.plan.byFirst.has(buf.charCodeAt(i))) return 'hold';
      const single = this.plan.byFirstTwo.get(-1 - buf.charCodeAt(i));
      if (!single) return null;
    }
    const entries =
      avail === 1
        ? this.plan.byFirstTwo.get(-1 - buf.charCodeAt(i))
        : this.plan.byFirstTwo.get(twoKey(buf, i));
    const singles = avail > 1 ? this.plan.byFirstTwo.get(-1 - buf.charCodeAt(i)) : undefined;
    const all = singles ? [...(entries ?? []), ...singles] : entries;
    if (!all) return null;
    const tried = new Set<FamilyParser>();
    // a family sees at most maxHeld chars after the marker: past that, 'need-more' is 'too long'
    const limit = i + this.maxHeld;
    const capped = buf.length > limit;
    const text = capped ? buf.slice(0, limit) : buf;
    const find = capped
      ? (lit: string, from: number): number => {
          const r = this.find(lit, from);
          return r >= 0 && r + lit.length > limit ? -1 : r;
        }
      : this.find;
    for (const e of all) {
      if (avail < e.marker.length) {
        // a longer marker may still complete here: decide nothing at i until it can
        if (!final && e.marker.startsWith(buf.slice(i))) return 'hold';
        continue;
      }
      if (!buf.startsWith(e.marker, i)) continue;
      for (const f of e.families) {
        if (tried.has(f) || (this.broken.get(f) ?? 0) >= MAX_BROKEN_PER_FAMILY) continue;
        tried.add(f);
        if (!f.spec.match) continue;
        const m = matchRepeated(
          f.spec.match,
          {
            text,
            start: i,
            marker: e.marker,
            final: final && !capped,
            ctx: this.ctx,
            find,
            jsonEnd: (from) => this.jsonEnd(from, text.length),
          },
          this.restarts,
        );
        if (m === 'need-more' && capped) {
          this.broken.set(f, (this.broken.get(f) ?? 0) + 1);
          const end = i + e.marker.length;
          const match: EnvelopeMatch = { end, calls: [], error: TOO_LONG };
          return { type: 'envelope', family: f, match, raw: buf.slice(i, end) };
        }
        if (m === 'need-more') {
          // small envelopes are re-asked on every push (calls stream out promptly); past
          // RETRY_EVERY_PUSH chars only after 1/8 growth, which keeps the total work linear;
          // and always as soon as the cap is passed
          const size = buf.length - i;
          this.retryAt = Math.min(size < RETRY_EVERY_PUSH ? 0 : buf.length + (size >> 3), limit + 1);
          return 'hold';
        }
        if (m) {
          // a broken envelope keeps only its marker: the text after it is scanned again, so one
          // bad tag cannot hide a good call behind it (the raw text stays content either way)
          if (m.error !== undefined) this.broken.set(f, (this.broken.get(f) ?? 0) + 1);
          const end = m.error !== undefined ? i + e.marker.length : Math.max(m.end, i + 1);
          return { type: 'envelope', family: f, match: { ...m, end }, raw: buf.slice(i, end) };
        }
      }
    }
    return null;
  }
}
