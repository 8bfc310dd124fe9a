/**
 * One SSE writer under every front door's stream: the hijacked reply and its headers, writes
 * that wait for the socket to drain (or close), the keep-alive timer, the end, and the shutdown
 * deadline's last event. Each front door's output (chat, Responses, Messages) extends it with
 * its framing only: what goes out with the headers, its keep-alive frame, chunks, end, failure.
 */
import type { FastifyReply } from 'fastify';
import type { ToolproofError } from '../protocol/errors.js';
import type { AppState } from './app-state.js';
import { untilDrainOrClose } from './drain.js';
import { KeepAlive, type KeepAliveTarget } from './keep-alive.js';
import { endStreamWith } from './open-streams.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

/**
 * Writes SSE straight to the socket; a full socket buffer pauses the upstream read
 * (backpressure), and a client that goes away releases the wait ('close'), as does one that
 * reads nothing for TOOLPROOF_REQUEST_TIMEOUT_MS (clientStallMs): it is cut as gone.
 */
export function writeRaw(reply: FastifyReply, data: string | Uint8Array): Promise<void> {
  return writeOrWait(reply, data) ?? Promise.resolve();
}

/** writeRaw without a promise when there is nothing to wait for (the stream's hot path). */
export function writeOrWait(reply: FastifyReply, data: string | Uint8Array): Promise<void> | undefined {
  const raw = reply.raw;
  if (raw.destroyed || raw.writableEnded) return undefined;
  if (raw.write(data)) return undefined;
  return untilDrainOrClose(raw, clientStallMs(reply));
}

/**
 * How long a response may wait for its client to take any of what was written: the bound on
 * receiving a client's request (TOOLPROOF_REQUEST_TIMEOUT_MS), the other way (server/drain.ts).
 */
export function clientStallMs(reply: FastifyReply): number {
  return (reply.server as { toolproof?: AppState }).toolproof?.config.clientTimeouts.requestMs ?? 0;
}

export abstract class SseWriter implements KeepAliveTarget {
  opened = false;
  protected readonly keepAlives: KeepAlive;
  /** Opened, and nothing written since: the head waits in the response (see open). */
  private headPending = false;

  constructor(
    protected readonly reply: FastifyReply,
    private readonly headers: Record<string, string>,
    keepAliveMs: number,
  ) {
    this.keepAlives = new KeepAlive(reply.raw, this, keepAliveMs);
    this.keepAlives.start();
  }

  /** What goes out right after the headers; '' for nothing (the headers are flushed alone). */
  protected abstract openingFrame(): string;

  /** Writes the front door's keep-alive frame (KeepAlive calls it for a quiet interval). */
  abstract keepAlive(): void;

  /**
   * Sends the status line and headers. The attempt loop never calls it for an upstream stream
   * that merely opened: the first write opens (the first live text, a held answer released, the
   * end), or the keep-alive timer's first quiet interval does. Until then a refusal that ends the
   * request (a retry's 400 or 500) is still the route's own error response, its real status, as
   * the non-streamed client gets it.
   */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.hijack();
    this.reply.raw.writeHead(200, { ...SSE_HEADERS, ...this.headers });
    const first = this.openingFrame();
    // Not awaited: open() is synchronous, and the next write waits for the socket anyway.
    if (first !== '') void this.write(first);
    else {
      // writeHead only queues the head until the first write: a held answer sent nothing at all.
      // The head is flushed on the next tick unless a write took it along before: the upstream's
      // first events usually come in with its headers, and are read and written in the same
      // turn, so head and first events go out in one write (one syscall, one segment).
      this.headPending = true;
      this.keepAlives.noteWrite();
      process.nextTick(flushPendingHead, this);
    }
  }

  /** The head alone, when nothing was written since open() (see open). */
  flushHead(): void {
    if (!this.headPending) return;
    this.headPending = false;
    const raw = this.reply.raw;
    if (!raw.destroyed && !raw.writableEnded) raw.flushHeaders();
  }

  /** One keep-alive interval passed (the timer's; tests call it by hand). */
  tick(): void {
    this.keepAlives.tick();
  }

  protected write(data: string | Uint8Array): Promise<void> {
    if (!this.opened) this.open();
    this.keepAlives.noteWrite();
    this.headPending = false;
    return writeRaw(this.reply, data);
  }

  /** write() without a promise when the socket takes the data (the hot path). */
  protected writeNow(data: string): Promise<void> | undefined {
    if (!this.opened) this.open();
    this.keepAlives.noteWrite();
    this.headPending = false;
    return writeOrWait(this.reply, data);
  }

  /** The shutdown deadline (OpenStream): the front door's failure frame, then the end. */
  protected endWith(err: ToolproofError, failFrame: (e: ToolproofError) => string): Promise<void> {
    this.keepAlives.stop();
    this.headPending = false; // the failure frame takes the head along
    return endStreamWith(this.reply.raw, (e) => this.reply.request.tpAbort?.abort(e), err, failFrame);
  }

  close(): void {
    this.keepAlives.stop();
    if (this.opened && !this.reply.raw.writableEnded) this.reply.raw.end();
  }
}

function flushPendingHead(writer: SseWriter): void {
  writer.flushHead();
}
