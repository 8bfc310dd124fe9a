/**
 * Where an event stream relayed as bytes ends: just past its `[DONE]` event (the blank line
 * that closes it). The front doors read events and stop at [DONE] (stream-read.ts,
 * dropAfterDone); a stream passed through as the upstream's own bytes (/v1/completions, routes
 * toolproof does not own) needs the same cut at a byte offset, the bytes before it unchanged.
 *
 * The event is the one SseParser reads as the payload `[DONE]`: exactly one data line, `data:
 * [DONE]` or `data:[DONE]`; comments and other fields do not count; lines end in LF, CR or
 * CRLF, and a CRLF may be split between two reads. One pass, no decoding: every byte is scanned
 * once (by indexOf), and of a line only its first 12 bytes are kept, across reads too, so a
 * line or an event of any length costs its bytes and nothing more.
 */

const LF = 10;
const CR = 13;
/** The longest line that can be [DONE]'s: `data: [DONE]`. */
const KEEP = 12;

export class SseDoneScan {
  /** The open line's first bytes (KEEP at most), as latin1. */
  private head = '';
  /** The open line is longer than KEEP: it cannot be [DONE]'s. */
  private long = false;
  /** The previous read ended on "\r": a "\n" opening the next one belongs to it. */
  private skipLf = false;
  /** Data lines of the open event, counted up to 2. */
  private dataLines = 0;
  /** The open event's first data line is `[DONE]`. */
  private doneLine = false;
  /** The [DONE] event was found: everything after it is not the client's. */
  done = false;
  /**
   * Events ended so far that held a data line (what SseParser reads as a payload): a stream of
   * comments and blank lines alone counts none (a relay's idle clock, QuietClock, reads it).
   */
  events = 0;

  /**
   * One read: the offset in it just past the [DONE] event's end, when that is in this read
   * (0 once it was in an earlier one); -1 while the stream goes on.
   */
  push(buf: Uint8Array): number {
    if (this.done) return 0;
    let start = 0;
    if (this.skipLf && buf.length > 0) {
      this.skipLf = false;
      if (buf[0] === LF) start = 1;
    }
    const bytes = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    // Next "\n" and "\r" at or after `start`, each searched again only once passed: one scan.
    let nl = bytes.indexOf(LF, start);
    let cr = bytes.indexOf(CR, start);
    while (nl !== -1 || cr !== -1) {
      const end = nl === -1 ? cr : cr === -1 ? nl : Math.min(nl, cr);
      this.keep(bytes, start, end);
      start = end + 1;
      if (bytes[end] === CR) {
        if (start === bytes.length) this.skipLf = true;
        else if (bytes[start] === LF) start++;
      }
      if (this.lineEnded()) {
        this.done = true;
        return start;
      }
      if (nl !== -1 && nl < start) nl = bytes.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = bytes.indexOf(CR, start);
    }
    if (start < bytes.length) this.keep(bytes, start, bytes.length);
    return -1;
  }

  private keep(bytes: Buffer, from: number, to: number): void {
    if (this.long || from === to) return;
    const room = KEEP - this.head.length;
    if (to - from > room) {
      this.long = true;
      to = from + room;
    }
    this.head += bytes.toString('latin1', from, to);
  }

  /** The open line ended: true when it was the blank line closing the [DONE] event. */
  private lineEnded(): boolean {
    const line = this.head;
    const long = this.long;
    this.head = '';
    this.long = false;
    if (line === '') {
      if (this.dataLines > 0) this.events++;
      const done = this.dataLines === 1 && this.doneLine;
      this.dataLines = 0;
      this.doneLine = false;
      return done;
    }
    if (!line.startsWith('data:')) return false;
    if (this.dataLines < 2) this.dataLines++;
    if (this.dataLines === 1) this.doneLine = !long && (line === 'data: [DONE]' || line === 'data:[DONE]');
    return false;
  }
}
