/**
 * Where the content stands in Markdown code: inside an inline code span (`…`) or a fenced block
 * (``` on its own line). An envelope that starts there is a sample the answer shows (the
 * syntax explained in inline code, an example call in a fence with prose around it), never a
 * call: the engine keeps it as text (engine.ts). A whole output that is one fenced call is read
 * by the whole-output families before this (the scanner hands them the output as a whole), and
 * a fenced call after a short lead-in by the lead-in gate, which sees the fence as text.
 *
 * Fed the content in order, in any pieces: a backtick run cut by a chunk edge is counted when it
 * ends, so every split answers the same. Linear: one regex jump per backtick run or line break.
 */

/** The next backtick or line break. */
const STOP = /[`\n]/g;

export class CodeSpans {
  /** Inside a fenced block: the length of its opening run (a closing run is at least as long). */
  private fence = 0;
  /** Inside an inline span: the length of its opening run (0: not inside). */
  private inline = 0;
  /** Only blanks (at most 3) since the line began: a run here may be a fence line. */
  private lineStart = true;
  private indent = 0;
  /** The rest of the line is a fence line's info string (```json): no span opens in it. */
  private infoLine = false;
  /** A backtick run still growing at the end of the text fed so far, and where it began. */
  private run = 0;
  private runAtLineStart = false;

  /**
   * Is the position after the text fed so far inside inline code or a fenced block? Asked where
   * the next character is no backtick (an envelope's first): a run cut here is taken as ended.
   */
  inCode(): boolean {
    this.endRun();
    return this.fence > 0 || this.inline > 0;
  }

  feed(text: string): void {
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
      if (c === 0x60) {
        if (this.run === 0) this.runAtLineStart = this.lineStart;
        this.run++;
        this.lineStart = false;
      } else if (c === 0x0a) {
        this.inline = 0;
        this.infoLine = false;
        this.lineStart = true;
        this.indent = 0;
      } else if (this.lineStart && c === 0x20 && this.indent < 3) this.indent++;
      else this.lineStart = false;
      i++;
    }
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
