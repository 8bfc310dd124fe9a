/**
 * Keep-alives on a stream that has nothing to say yet. An answer is held while a corrective
 * retry is still possible, a retry takes a whole generation, and a long prompt keeps the
 * upstream silent before its first token: without bytes on the wire, a proxy's idle timeout
 * (nginx: 60 s) cuts a stream that is still working, and clients' first-byte timeouts fire.
 *
 * One timer per stream, from the moment the route sets the stream up. At each interval in which
 * nothing was written:
 * - a stream not yet open is opened (status line and headers, flushed), so a slow upstream or a
 *   long held answer is not a silent one either; before that first interval, and before the
 *   stream's first write (sse-writer.ts open), a refusal still gets its own HTTP status;
 * - an open stream gets the front door's own keep-alive: an SSE comment (chat), a `keepalive`
 *   event (Responses, as OpenAI's own long streams send), a `ping` event (Messages).
 * Nothing is written while the socket is full (backpressure: the client is not reading anyway).
 */
import type { ServerResponse } from 'node:http';

/** Default interval (server.streamKeepAliveMs, TOOLPROOF_STREAM_KEEPALIVE_MS). */
export const DEFAULT_STREAM_KEEPALIVE_MS = 15_000;

/** The chat keep-alive: an SSE comment line, which every SSE reader skips. */
export const SSE_KEEPALIVE_COMMENT = ': keep-alive\n\n';

export interface KeepAliveTarget {
  readonly opened: boolean;
  open(): void;
  /** Writes the front door's keep-alive frame. */
  keepAlive(): void;
}

export class KeepAlive {
  private timer: NodeJS.Timeout | undefined;
  /** Something went out since the last tick. */
  private wrote = false;

  constructor(
    private readonly raw: ServerResponse,
    private readonly target: KeepAliveTarget,
    private readonly intervalMs: number,
  ) {}

  /** Starts the interval timer (idempotent; unref'd: it never keeps the process alive). */
  start(): void {
    if (this.timer !== undefined || this.intervalMs <= 0) return;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** Something was written: the current interval needs no keep-alive. */
  noteWrite(): void {
    this.wrote = true;
  }

  /** One interval passed (the timer's callback; tests drive it by hand). */
  tick(): void {
    const raw = this.raw;
    if (raw.destroyed || raw.writableEnded) {
      this.stop();
      return;
    }
    if (!this.wrote && !raw.writableNeedDrain) {
      if (!this.target.opened) this.target.open();
      else this.target.keepAlive();
    }
    this.wrote = false;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
