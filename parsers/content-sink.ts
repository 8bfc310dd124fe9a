/**
 * Leftover content, with the one whitespace rule both paths share (so streaming equals
 * non-streaming): whitespace touching a removed envelope ("cut") is dropped; when text sits on
 * both sides of a cut the pieces are joined with a single "\n"; whitespace-only content is
 * empty (null). Text with no cut next to it passes byte for byte. Only whitespace is ever held
 * back, so prose streams without delay.
 */
import { skipWs, trimEndIndex } from './util/json-scan.js';

export class ContentSink {
  private pendingWs = '';
  private afterCut = false;
  private emittedAny = false;

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
    if (last === start) {
      this.pendingWs += text.slice(start);
      return '';
    }
    const out = this.pendingWs + text.slice(start, last);
    this.pendingWs = text.slice(last);
    this.emittedAny = true;
    return out;
  }

  cut(): void {
    this.pendingWs = '';
    this.afterCut = true;
  }

  finish(): string {
    const out = this.emittedAny && !this.afterCut ? this.pendingWs : '';
    this.pendingWs = '';
    return out;
  }
}
