/**
 * A complete call written in the reasoning the output opened (a leading `<think>`, a family's
 * section, or the prompt with `startsInReasoning`), with no close after it to the end of the
 * output, ends that reasoning: it is a call, and the reasoning is the text before it (llama.cpp:
 * "a tool call ends the prefilled thinking block, with or without a closing </think>"). A close
 * after it makes it a draft instead: it stays reasoning, byte for byte (the bare-close rule,
 * bare-think.ts, read from the other side).
 *
 * What streams live: reasoning up to the first complete call. From there on the reasoning is
 * held until
 * - the close: the held text was reasoning after all (drafts included), released as reasoning;
 * - the end of output: the held calls are calls, the text around them is content;
 * - more than maxHeld code units: released as reasoning (drafts), the same for every split.
 */
import type { ScanEvent } from './scanner.js';

export class ReasoningCalls {
  private held: ScanEvent[] | null = null;
  private heldLen = 0;
  private done = false;

  constructor(private readonly maxHeld: number) {}

  /** One scan event of reasoning in; the events that are reasoning now, in order. */
  feed(e: ScanEvent, isCall: boolean): ScanEvent[] {
    if (this.done) return [e];
    if (this.held === null) {
      if (!isCall) return [e];
      this.held = [e];
      this.heldLen = sizeOf(e);
      return [];
    }
    this.held.push(e);
    this.heldLen += sizeOf(e);
    if (this.heldLen > this.maxHeld) return this.close();
    return [];
  }

  /** The reasoning closed (or the cap passed): whatever is held was reasoning. */
  close(): ScanEvent[] {
    const out = this.held ?? [];
    this.held = null;
    this.done = true;
    return out;
  }

  /** End of output without a close: the held events, the first of them a call. */
  end(): ScanEvent[] {
    return this.close();
  }
}

function sizeOf(e: ScanEvent): number {
  return e.type === 'text' ? e.text.length : e.type === 'envelope' ? e.raw.length : 0;
}
