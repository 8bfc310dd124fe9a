/**
 * Leftover content, with the one whitespace rule both paths share (so streaming equals
 * non-streaming): whitespace touching a removed envelope ("cut") is dropped; when text sits on
 * both sides of a cut the pieces are joined with a single "\n"; whitespace-only content is
 * empty (null). Text with no cut next to it passes byte for byte. Only whitespace is ever held
 * back, so prose streams without delay; and at most `maxHeld` of it: a blank run longer than
 * that is emitted as it comes (all of it, whatever follows), which depends only on the run's
 * length, so every split decides the same.
 */
import { skipWs, trimEndIndex } from '../kit/json-scan.js';

export class ContentSink {
  private pendingWs = '';
  private afterCut = false;
  private emittedAny = false;
  /** The current blank run passed maxHeld: it streams through. */
  private longRun = false;

  constructor(private readonly maxHeld = Number.POSITIVE_INFINITY) {}

  get hasContent(): boolean {
    return this.emittedAny;
  }

  /** Returns the text that can be emitted now. */
  write(text: string): string {
    let start = 0;
    if (this.afterCut) {
      start = skipWs(text, 0);
      if (start === text.length) return '';
      this.afterCut = false;
      this.pendingWs = this.emittedAny ? '\n' : '';
    }
    const last = trimEndIndex(text, text.length, start);
    if (last === start) return this.blank(text.slice(start));
    const out = this.pendingWs + text.slice(start, last);
    this.pendingWs = '';
    this.longRun = false;
    this.emittedAny = true;
    return out + this.blank(text.slice(last));
  }

  /** Holds a blank piece, or lets it through once its run is longer than maxHeld. */
  private blank(ws: string): string {
    if (ws === '') return '';
    if (!this.longRun && this.pendingWs.length + ws.length <= this.maxHeld) {
      this.pendingWs += ws;
      return '';
    }
    const out = this.pendingWs + ws;
    this.pendingWs = '';
    this.longRun = true;
    this.emittedAny = true;
    return out;
  }

  cut(): void {
    this.pendingWs = '';
    this.longRun = false;
    this.afterCut = true;
  }

  finish(): string {
    const out = this.emittedAny && !this.afterCut ? this.pendingWs : '';
    this.pendingWs = '';
    return out;
  }
}
