/**
 * A complete call envelope written inside a sentence that explains or offers rather than acts:
 * "To do that you would write <tool_call>{…}</tool_call> in your own agent." The envelope is a
 * noun in the sentence, not a call: the sentence goes on after it on the same line, and the
 * words before it in that sentence are the lead-in gate's explaining words (lead-in.ts:
 * "would", "you can", "for example", "the format", "here is how", …). Such an envelope is text,
 * byte for byte, as a quoted one is (quoted-text.ts), and leaves no leak record.
 *
 * Narrow on purpose (docs/recall.md, "Envelopes inside prose"): every other envelope reads as
 * before. Not one after prose that acts ("Let me check. <tool_call>…", "First I'll do this.
 * <tool_call>…</tool_call> Then…", the peers' "Before <…> after."), nor one the sentence's
 * own speaker performs ("I would like to read it <tool_call>…</tool_call> and then…"), nor one
 * that ends its line or the output ("You would write <tool_call>…</tool_call>"): the words
 * alone cannot tell those from a call. But when that sentence ends in a colon right before the
 * envelope, on its line ("You could do it like this: <tool_call>…"), the colon hands it to the
 * envelope: the sample it introduces, text whatever follows (the lead-in gate refuses the same
 * lead-in before an unmarked call; an envelope on a line of its own after it is still a call).
 *
 * What streams: an envelope that may be such a sample is held (with the blanks after it) until
 * the first other character after it decides: a letter, a digit or `,;(` and dashes go on with
 * the sentence (text); a line break, other punctuation, another envelope or the end of output
 * do not (the call, as before). Every split decides the same: the decision depends only on
 * that character. Blanks after it past MAX_BLANKS release it as a call. Linear: a text event
 * is appended to a tail kept bounded, and the sentence before an envelope is tested once, on
 * at most TAIL code units.
 */
import { EXPLAINING, EXPLAINING_OTHER } from './lead-in.js';
import type { ScanEvent } from './scanner.js';

/** Code units of the line before an envelope that are read for its sentence. */
const TAIL = 256;
/** Blanks after a held envelope before it is released as a call. */
const MAX_BLANKS = 64;

/** A sentence's end: punctuation before a blank (a colon introduces; it ends nothing here). */
const SENTENCE_END = /[.!?…][\s"')\]]*\s|[。！？]/g;
/** The speaker acting: a sentence with it announces the speaker's own call. */
const FIRST_PERSON = /\bI(?:'m|'ll|'d|'ve)?\b|\b[Ll]et(?:'s| me| us)\b|\b[Ww]e(?:'ll|'re|'d)?\b/;
/** A line that ends in a colon: what comes next is what the sentence introduces. */
const INTRODUCES = /[:：][ \t]*$/;
/**
 * An opening quotation mark right before the envelope, after a blank, a bracket or a colon (or at the
 * line's start): with its closing mark the first thing after the envelope, the envelope is a quotation
 * (recall12: "The model writes "<tool_call>…</tool_call>" when it wants that.").
 */
const OPENS_QUOTE = /(?:^|[\s([:：])(["“«„])$/;
const CLOSING: Record<string, string> = { '"': '"', '“': '”', '«': '»', '„': '“' };
/** What goes on with a sentence after the envelope. */
const GOES_ON = /[\p{L}\p{N},;(\-–—]/u;

/** Does the sentence that `line` ends in explain or offer (and not announce the speaker's act)? */
export function explainsBefore(line: string): boolean {
  const tail = line.length > TAIL ? line.slice(-TAIL) : line;
  let from = 0;
  SENTENCE_END.lastIndex = 0;
  for (let m = SENTENCE_END.exec(tail); m !== null; m = SENTENCE_END.exec(tail)) from = m.index + m[0].length;
  const sentence = tail.slice(from);
  if (sentence.trim() === '') return false;
  if (!EXPLAINING.test(sentence) && !EXPLAINING_OTHER.test(sentence)) return false;
  return !FIRST_PERSON.test(sentence);
}

export class MidSentenceWatch {
  /** The latest text, across line breaks (between TAIL and 2 x TAIL code units once that long). */
  private recent = '';
  /** A held envelope and the blank text after it. */
  private held: ScanEvent[] = [];
  private blanks = 0;
  /** The closing mark a held envelope's quotation needs (null: held as a sentence's object). */
  private quote: string | null = null;

  /** One scan event in; `emit` gets the events to pass on, in order. `isCall`: an accepted call. */
  feed(e: ScanEvent, isCall: (e: ScanEvent) => boolean, emit: (e: ScanEvent) => void): void {
    if (this.held.length > 0) {
      if (e.type !== 'text') this.release(false, emit);
      else {
        const at = firstNonBlank(e.text);
        if (at < 0) {
          this.held.push(e);
          this.blanks += e.text.length;
          if (this.blanks > MAX_BLANKS) this.release(false, emit);
          return;
        }
        // counted over every event since the envelope: the same verdict for every split
        const next = e.text[at] as string;
        this.release(
          this.blanks + at <= MAX_BLANKS && (this.quote === null ? GOES_ON.test(next) : next === this.quote),
          emit,
        );
      }
    }
    if (e.type === 'text') {
      this.see(e.text);
      emit(e);
      return;
    }
    if (e.type === 'envelope' && isCall(e)) {
      const line = this.lineTail();
      const quoted = OPENS_QUOTE.exec(line);
      if (quoted) {
        this.held.push(e);
        this.blanks = 0;
        this.quote = CLOSING[quoted[1] as string] as string;
        return;
      }
      if (explainsBefore(line)) {
        // "You could do it like this: <call>": the colon hands the sentence to the envelope,
        // its object; whatever follows (nothing, a line break), it is the sample shown
        if (INTRODUCES.test(line)) {
          this.see(e.raw);
          emit({ type: 'text', text: e.raw });
          return;
        }
        this.held.push(e);
        this.blanks = 0;
        this.quote = null;
        return;
      }
    }
    if (e.type === 'envelope') this.see(e.raw);
    emit(e);
  }

  /** The end of output: a held envelope ends its line, so it is the call it was. */
  finish(emit: (e: ScanEvent) => void): void {
    if (this.held.length > 0) this.release(false, emit);
  }

  /** Passes the held envelope on, as text when the sentence goes on after it. */
  private release(sample: boolean, emit: (e: ScanEvent) => void): void {
    const held = this.held;
    this.held = [];
    const first = held[0] as Extract<ScanEvent, { type: 'envelope' }>;
    if (sample) {
      this.see(first.raw);
      emit({ type: 'text', text: first.raw });
    } else {
      this.recent = '\n'; // a call ends the sentence it was written in
      emit(first);
    }
    for (let i = 1; i < held.length; i++) {
      const t = held[i] as Extract<ScanEvent, { type: 'text' }>;
      this.see(t.text);
      emit(t);
    }
  }

  /**
   * Only appended to (the cheapest a text event can cost): the line is cut out of it when an
   * envelope asks (lineTail). Kept at TAIL code units at least, so the cut is exact.
   */
  private see(text: string): void {
    this.recent += text;
    if (this.recent.length > 2 * TAIL) this.recent = this.recent.slice(-TAIL);
  }

  /** The current line's last TAIL code units at most. */
  private lineTail(): string {
    const recent = this.recent;
    const nl = recent.lastIndexOf('\n');
    const line = nl >= 0 ? recent.slice(nl + 1) : recent;
    return line.length > TAIL ? line.slice(-TAIL) : line;
  }
}

/** The first character that is not a space or a tab (a line break counts), or -1. */
function firstNonBlank(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09) return i;
  }
  return -1;
}
