/**
 * A bare `</think>` (no `<think>` before it in the output) means the chat template opened the
 * reasoning block in the prompt: everything before it was reasoning, so a complete call written
 * there is a draft, not a call, even when the model is not configured `startsInReasoning`.
 * The same holds for every family's own close from the one marker table (think-split.ts:
 * Command R7B's `<|END_THINKING|>`, Kimi K3's `<|close|>think<|sep|>`, Apriel's
 * `[BEGIN FINAL RESPONSE]`); "`</think>`" below stands for any of them.
 *
 * What streams live (the choice that keeps streaming equal to non-streaming): text before the
 * first complete call streams as content, as it always did (holding every response until a
 * `</think>` that usually never comes would delay all prose to the end). From the first
 * complete call on, that call and everything after it are held until either
 * - a `</think>` in text outside envelopes: the held calls were drafts (their raw text stays
 *   content, with a 'rejected' leak record) and later calls are real;
 * - the end of output: the held calls are real;
 * - more than maxHeld code units held without a `</think>`: the held calls are real (the same
 *   for every split: the decision depends on where the `</think>` ends, counted from the
 *   first call's marker).
 * Only the first `</think>` matters; after it, or when the output opened with `<think>`, or
 * with `startsInReasoning`, nothing is held here.
 */
import type { ScanEvent } from './scanner.js';
import { TagSet } from './tag-set.js';

export interface Released {
  e: ScanEvent;
  /** A complete call written before a bare </think>: keep its raw text as content. */
  draft: boolean;
}

export class BareThinkWatch {
  private active = true;
  /** The last `keep` chars of text outside envelopes (a close split across events). */
  private tail = '';
  private held: ScanEvent[] | null = null;
  private heldLen = 0;
  /** The longest close, less one: enough tail to complete any split close. */
  private readonly keep: number;

  constructor(
    private readonly maxHeld: number,
    /** The closes to watch for (ThinkMarkers.closeSet). */
    private readonly closes: TagSet = new TagSet(['</think>']),
  ) {
    this.keep = Math.max(0, closes.longest - 1);
  }

  /** The output opened reasoning itself (or the template does, by config): nothing to watch. */
  stop(): void {
    this.active = false;
  }

  /** One scan event in; the events to handle now, in order. `isCall`: a complete, accepted call. */
  feed(e: ScanEvent, isCall: boolean): Released[] {
    if (!this.active) return [{ e, draft: false }];
    if (this.held === null) {
      if (e.type === 'text') {
        if (this.sees(e.text) >= 0) this.active = false;
        return [{ e, draft: false }];
      }
      this.tail = '';
      if (!isCall || e.type !== 'envelope') return [{ e, draft: false }];
      this.held = [e];
      this.heldLen = e.raw.length;
      return [];
    }
    const size = e.type === 'text' ? e.text.length : e.type === 'envelope' ? e.raw.length : 0;
    if (e.type === 'text') {
      const k = this.sees(e.text);
      if (k >= 0 && this.heldLen + k <= this.maxHeld) return this.release(true, e);
    } else this.tail = '';
    if (this.heldLen + size > this.maxHeld) return this.release(false, e);
    this.held.push(e);
    this.heldLen += size;
    return [];
  }

  /** End of output: whatever is held was not followed by a </think>: real calls. */
  finish(): Released[] {
    if (this.held === null) return [];
    const out = this.held.map((e) => ({ e, draft: false }));
    this.held = null;
    this.active = false;
    return out;
  }

  /**
   * Looks for a close across the previous text and this one; returns how many chars of `text`
   * it takes to complete the first (-1: none), and keeps the new tail. A close wholly inside
   * the old tail cannot be there: it would have been seen (and ended the watch) last time.
   */
  private sees(text: string): number {
    // most chunks hold no char a close starts with: with no tail either, nothing to join or keep
    if (this.tail === '' && !this.closes.anyStart(text)) return -1;
    const joined = this.tail + text;
    const hit = this.closes.first(joined);
    const keep = this.keep;
    this.tail = keep === 0 ? '' : text.length >= keep ? text.slice(-keep) : joined.slice(-keep);
    // a tail with no such char cannot begin a close either
    if (!this.closes.anyStart(this.tail)) this.tail = '';
    return hit === null ? -1 : hit.at + hit.len - (joined.length - text.length);
  }

  private release(draft: boolean, last: ScanEvent): Released[] {
    const out = (this.held ?? []).map((e) => ({ e, draft }));
    out.push({ e: last, draft: false });
    this.held = null;
    this.active = false;
    return out;
  }
}
