/**
 * Where the content stands in text an answer quotes or shows rather than says: an inline code
 * span (`…`), a fenced block (``` on its own line), a blockquote line (`> …`) or an HTML
 * comment (`<!-- … -->`). An envelope that starts there is a sample (the syntax explained in
 * inline code, an example call in a fence with prose around it, the user's call quoted back, a
 * call commented out), never a call: the engine keeps it as text (engine.ts). A whole output
 * that is one fenced call is read by the whole-output families before this (the scanner hands
 * them the output as a whole), and a fenced call after a short lead-in by the lead-in gate,
 * which sees the fence as text.
 *
 * Fed the content in order, in any pieces: a backtick run or a comment delimiter cut by a chunk
 * edge is decided when it ends, so every split answers the same. Linear: one regex jump per
 * backtick, line break, `<` or `-`.
 */

const STOP = /[`\n<-]/g;
const OPEN_COMMENT = '<!--';
const CLOSE_COMMENT = '-->';

export class QuotedText {
  /** Inside a fenced block: the length of its opening run (a closing run is at least as long). */
  private fence = 0;
  /** Inside an inline span: the length of its opening run (0: not inside). */
  private inline = 0;
  private comment = false;
  /** This line began with `>`. */
  private quoteLine = false;
  /** Only blanks (at most 3) since the line began: a run here may be a fence line. */
  private lineStart = true;
  private indent = 0;
  /** The rest of the line is a fence line's info string (```json): no span opens in it. */
  private infoLine = false;
  /** A backtick run still growing at the end of the text fed so far, and where it began. */
  private run = 0;
  private runAtLineStart = false;
  /** The text's end that may begin a comment delimiter, read again with the next piece. */
  private carry = '';

  /**
   * Is the position after the text fed so far quoted or shown? Asked at an envelope's start,
   * the same place for every split: a backtick run or a comment delimiter cut there is taken as
   * ended (the envelope's first character cannot go on with it).
   */
  quoted(): boolean {
    this.endRun();
    this.carry = '';
    return this.fence > 0 || this.inline > 0 || this.comment || this.quoteLine;
  }

  feed(piece: string): void {
    const text = this.carry === '' ? piece : this.carry + piece;
    this.carry = '';
    let i = 0;
    while (i < text.length) {
      if (this.run > 0 && text.charCodeAt(i) !== 0x60) this.endRun();
      if (this.run === 0 && !this.lineStart) {
        STOP.lastIndex = i;
        const m = STOP.exec(text);
        if (m === null) return;
        i = m.index;
      }
      const c = text.charCodeAt(i);
      if (c === 0x0a) {
        this.inline = 0;
        this.infoLine = false;
        this.quoteLine = false;
        this.lineStart = true;
        this.indent = 0;
        i++;
        continue;
      }
      const atLineStart = this.lineStart;
      this.lineStart = false;
      if (c === 0x2d || c === 0x3c) {
        const delim = this.comment ? CLOSE_COMMENT : c === 0x3c && this.codeFree() ? OPEN_COMMENT : '';
        if (delim !== '' && text.charCodeAt(i) === delim.charCodeAt(0)) {
          if (text.startsWith(delim, i)) {
            this.comment = !this.comment;
            i += delim.length;
            continue;
          }
          if (text.length - i < delim.length && delim.startsWith(text.slice(i))) {
            this.carry = text.slice(i);
            this.lineStart = atLineStart;
            return;
          }
        }
      } else if (c === 0x60) {
        if (!this.comment) {
          if (this.run === 0) this.runAtLineStart = atLineStart;
          this.run++;
        }
      } else if (atLineStart && c === 0x20 && this.indent < 3) {
        this.indent++;
        this.lineStart = true;
      } else if (atLineStart && c === 0x3e && !this.comment && this.codeFree()) this.quoteLine = true;
      i++;
    }
  }

  /** Outside inline code and fenced blocks (where `<!--` and `>` are code). */
  private codeFree(): boolean {
    return this.fence === 0 && this.inline === 0;
  }

  private endRun(): void {
    const k = this.run;
    if (k === 0) return;
    this.run = 0;
    if (this.runAtLineStart && k >= 3) {
      if (this.fence === 0) this.fence = k;
      else if (k >= this.fence) this.fence = 0;
      this.inline = 0;
      this.infoLine = true;
      return;
    }
    if (this.fence > 0 || this.infoLine) return;
    if (this.inline === 0) this.inline = k;
    else if (this.inline === k) this.inline = 0;
  }
}
