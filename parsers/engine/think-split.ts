/**
 * Splits <think>…</think> out of content, incrementally. A leading <think> (after whitespace)
 * opens reasoning; with `startsInReasoning` (templates that open <think> in the prompt, e.g.
 * Qwen3, DeepSeek-R1) the output is reasoning until </think>. A bare </think> without that
 * option stays content: deciding it later would mean holding every non-reasoning response to
 * the end, and streaming must equal non-streaming.
 */
import { skipWs } from '../kit/json-scan.js';

export type ThinkPiece = { kind: 'content' | 'reasoning'; text: string } | { kind: 'cut' };

const OPEN = '<think>';
const CLOSE = '</think>';

function partialTail(buf: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, buf.length); k > 0; k--) {
    if (buf.endsWith(tag.slice(0, k))) return k;
  }
  return 0;
}

export class ThinkSplitter {
  private state: 'start' | 'in' | 'out';
  private buf = '';
  /** The output opened reasoning (leading <think>, or startsInReasoning). */
  opened = false;
  /** In 'start': buf[0..wsEnd) is known whitespace, so a long blank run is walked once, not per push. */
  private wsEnd = 0;

  constructor(
    startsInReasoning: boolean,
    /** A blank run longer than this before anything else: no leading <think> any more. */
    private readonly maxHeld = Number.POSITIVE_INFINITY,
  ) {
    this.state = startsInReasoning ? 'in' : 'start';
    this.opened = startsInReasoning;
  }

  push(text: string, final = false): ThinkPiece[] {
    const out: ThinkPiece[] = [];
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
    if (this.state === 'start') {
      const i = skipWs(this.buf, this.wsEnd);
      this.wsEnd = i;
      const rest = this.buf.slice(i);
      if (i > this.maxHeld) this.state = 'out';
      else if (rest.startsWith(OPEN)) {
        this.state = 'in';
        this.opened = true;
        this.buf = rest.slice(OPEN.length);
      } else if (!final && (i === this.buf.length || OPEN.startsWith(rest))) {
        return out;
      } else this.state = 'out';
    }
    if (this.state === 'in') {
      const j = this.buf.indexOf(CLOSE);
      if (j < 0) {
        const keep = final ? 0 : partialTail(this.buf, CLOSE);
        const emit = this.buf.slice(0, this.buf.length - keep);
        if (emit) out.push({ kind: 'reasoning', text: emit });
        this.buf = this.buf.slice(emit.length);
        return out;
      }
      if (j > 0) out.push({ kind: 'reasoning', text: this.buf.slice(0, j) });
      out.push({ kind: 'cut' });
      this.buf = this.buf.slice(j + CLOSE.length);
      this.state = 'out';
    }
    if (this.buf) out.push({ kind: 'content', text: this.buf });
    this.buf = '';
    return out;
  }

  finish(): ThinkPiece[] {
    return this.push('', true);
  }
}
