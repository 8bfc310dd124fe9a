/**
 * Splits reasoning sections out of content, incrementally. The markers come from one table:
 * the built-in `<think>…</think>` plus every enabled family's `reasoning` (family.ts), e.g.
 * Command R7B's `<|START_THINKING|>…<|END_THINKING|>` or Kimi K3's think section.
 *
 * - A leading open (after whitespace) opens reasoning, which its own close ends.
 * - With `startsInReasoning` (templates that open the section in the prompt: Qwen3, DeepSeek-R1,
 *   Cohere2 MoE, Kimi K3, Apriel 1.6) the output is reasoning until ANY close of the table; a
 *   family's `skippedBy` marker first in the output means the model skipped it (no reasoning).
 * - A bare close without that option stays content: deciding it later would mean holding every
 *   non-reasoning response to the end, and streaming must equal non-streaming (bare-think.ts
 *   still reads it: calls before it were drafts).
 * - With `startsInReasoning: 'maybe'` (the prompt may have opened the section: a template whose
 *   switch the request sets, a model seen closing reasoning it never opened) that hold is paid,
 *   bounded: unless a leading open or skip marker decides it, the output is held from its first
 *   char until a close of the table ends within the first `maxHeld` chars (everything before it
 *   was reasoning, as with `true`) or until the end of output or `maxHeld` chars without one
 *   (it was content, byte for byte, as with `false`; a later bare close is then read by
 *   bare-think.ts as before). The decision depends on the text only, so every split decides
 *   the same; the cost is latency: such an answer streams once it is decided.
 */
import type { FamilyParser, ReasoningMarkers } from './family.js';
import { skipWs } from '../kit/json-scan.js';
import { TagSet } from './tag-set.js';

export type ThinkPiece = { kind: 'content' | 'reasoning'; text: string } | { kind: 'cut' };

/** The reasoning markers of one parser set, gathered once per scan plan. */
export interface ThinkMarkers {
  /** Leading opens, each with the close that ends it; longest first. */
  readonly opens: readonly { open: string; close: string }[];
  /** Every close (ends prompt-opened reasoning; a bare one marks drafts). */
  readonly closes: readonly string[];
  /** The same closes, searched as one (checked in every streamed chunk). */
  readonly closeSet: TagSet;
  /** Skip markers for prompt-opened reasoning; longest first. */
  readonly skips: readonly string[];
}

/** The generic pair every model family that thinks in tags uses. */
const THINK: ReasoningMarkers = { open: '<think>', close: '</think>' };

export function collectThinkMarkers(families: readonly FamilyParser[]): ThinkMarkers {
  const all = [THINK, ...families.flatMap((f) => f.spec.reasoning ?? [])];
  const opens = new Map<string, string>();
  for (const m of all) if (m.open && !opens.has(m.open)) opens.set(m.open, m.close);
  const byLength = (a: string, b: string) => b.length - a.length;
  const closes = [...new Set(all.map((m) => m.close))];
  return {
    opens: [...opens].sort(([a], [b]) => byLength(a, b)).map(([open, close]) => ({ open, close })),
    closes,
    closeSet: new TagSet(closes),
    skips: [...new Set(all.flatMap((m) => m.skippedBy ?? []))].sort(byLength),
  };
}

/** Whether the prompt opened the reasoning: yes, no, or perhaps (decided by the output itself). */
export type StartsInReasoning = boolean | 'maybe';

export class ThinkSplitter {
  private state: 'start' | 'in' | 'out' | 'maybe';
  /** In 'maybe': the held text in pieces (joining a long concatenation per push is quadratic). */
  private held: string[] = [];
  private heldLen = 0;
  /** In 'maybe': the held text's last (longest close - 1) chars, where a close may be cut. */
  private heldTail = '';
  private buf = '';
  /** The output opened reasoning (a leading open, or startsInReasoning). */
  opened = false;
  /** In 'start': buf[0..wsEnd) is known whitespace, so a long blank run is walked once, not per push. */
  private wsEnd = 0;
  /** In 'in': what ends the reasoning. */
  private closes: TagSet;
  /** In 'start': what is looked for first (opens, or skip markers with startsInReasoning). */
  private readonly leads: readonly string[];

  private readonly startsInReasoning: boolean;
  private readonly maybe: boolean;

  constructor(
    private readonly markers: ThinkMarkers,
    starts: StartsInReasoning,
    /** A blank run longer than this before anything else: no leading marker any more. */
    private readonly maxHeld = Number.POSITIVE_INFINITY,
  ) {
    this.startsInReasoning = starts === true;
    this.maybe = starts === 'maybe';
    const startsInReasoning = this.startsInReasoning;
    this.opened = startsInReasoning;
    this.closes = markers.closeSet;
    this.leads = startsInReasoning
      ? markers.skips
      : this.maybe
        ? [...markers.opens.map((o) => o.open), ...markers.skips]
        : markers.opens.map((o) => o.open);
    // prompt-opened reasoning with nothing that could skip it streams from the first char
    this.state = startsInReasoning && this.leads.length === 0 ? 'in' : 'start';
  }

  push(text: string, final = false): ThinkPiece[] {
    const out: ThinkPiece[] = [];
    if (this.state === 'maybe') {
      this.undecided(text, final, out);
      return out;
    }
    if (
      this.state === 'start' &&
      !final &&
      this.wsEnd === this.buf.length &&
      this.buf.length + text.length <= this.maxHeld &&
      skipWs(text, 0) === text.length
    ) {
      // a blank run before anything else: append without reading buf (reading a long
      // concatenation flattens it, which made 40k blank-line deltas quadratic)
      this.buf += text;
      this.wsEnd = this.buf.length;
      return out;
    }
    this.buf += text;
    if (this.state === 'start' && this.lead(final)) return out;
    // lead() may have moved the state to 'maybe' (read through a method: no narrowing)
    if (this.holding()) {
      const held = this.buf;
      this.buf = '';
      this.undecided(held, final, out);
      return out;
    }
    if (this.state === 'in') {
      const hit = this.closes.first(this.buf);
      if (hit === null) {
        const keep = final ? 0 : this.closes.partialTail(this.buf);
        const emit = this.buf.slice(0, this.buf.length - keep);
        if (emit) out.push({ kind: 'reasoning', text: emit });
        this.buf = this.buf.slice(emit.length);
        return out;
      }
      if (hit.at > 0) out.push({ kind: 'reasoning', text: this.buf.slice(0, hit.at) });
      out.push({ kind: 'cut' });
      this.buf = this.buf.slice(hit.at + hit.len);
      this.state = 'out';
    }
    if (this.buf) out.push({ kind: 'content', text: this.buf });
    this.buf = '';
    return out;
  }

  finish(): ThinkPiece[] {
    return this.push('', true);
  }

  private holding(): boolean {
    return this.state === 'maybe';
  }

  /**
   * 'maybe': a close ending within the first maxHeld chars makes the text before it reasoning;
   * the end of output or maxHeld chars without one make it content. Until then, text is held.
   */
  private undecided(text: string, final: boolean, out: ThinkPiece[]): void {
    const joined = this.heldTail + text;
    const base = this.heldLen - this.heldTail.length;
    // a close wholly inside the old tail would have been found by the previous push
    const hit = this.closes.first(joined);
    this.held.push(text);
    this.heldLen += text.length;
    const decided = hit !== null || final || this.heldLen >= this.maxHeld;
    if (!decided) {
      const keep = this.closes.longest - 1;
      this.heldTail = keep <= 0 ? '' : joined.slice(-keep);
      return;
    }
    const all = this.held.join('');
    this.held = [];
    this.heldLen = 0;
    this.heldTail = '';
    this.state = 'out';
    if (hit !== null && base + hit.at + hit.len <= this.maxHeld) {
      const at = base + hit.at;
      if (at > 0) out.push({ kind: 'reasoning', text: all.slice(0, at) });
      out.push({ kind: 'cut' });
      this.opened = true;
      const rest = all.slice(at + hit.len);
      if (rest) out.push({ kind: 'content', text: rest });
      return;
    }
    // no close ends within maxHeld chars: it was content, byte for byte
    if (all) out.push({ kind: 'content', text: all });
  }

  /** 'start': decides what the output opens with; true = still undecided (hold). */
  private lead(final: boolean): boolean {
    const i = skipWs(this.buf, this.wsEnd);
    this.wsEnd = i;
    // nothing leads: prompt-opened reasoning goes on, otherwise the output is content
    const otherwise = this.startsInReasoning ? 'in' : 'out';
    if (i > this.maxHeld) {
      this.state = otherwise;
      return false;
    }
    const rest = this.buf.slice(i);
    if (this.startsInReasoning || (this.maybe && this.markers.skips.some((l) => rest.startsWith(l)))) {
      if (this.leads.some((l) => rest.startsWith(l))) {
        // skipped: the marker and what follows are the answer (the scanner reads the marker)
        this.state = 'out';
        return false;
      }
    } else {
      const pair = this.markers.opens.find((o) => rest.startsWith(o.open));
      if (pair) {
        this.state = 'in';
        this.opened = true;
        this.closes = new TagSet([pair.close]);
        this.buf = rest.slice(pair.open.length);
        return false;
      }
    }
    if (!final && (i === this.buf.length || this.leads.some((l) => l.startsWith(rest)))) return true;
    this.state = this.maybe ? 'maybe' : otherwise;
    return false;
  }
}
