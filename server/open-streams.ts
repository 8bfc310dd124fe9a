/**
 * Streams open right now, so that the shutdown deadline can end each one honestly (an SSE error
 * event and `data: [DONE]`) instead of resetting the connection mid-event. app.ts registers every
 * request's response (only those that turned out to be SSE are ended); stream code may register
 * its own OpenStream too: ending twice is a no-op.
 */
import type { ServerResponse } from 'node:http';
import type { ToolproofError } from '../protocol/errors.js';
import { sseErrorEvent } from './error-handler.js';

export interface OpenStream {
  /** Ends the stream with an error event and [DONE]; resolves once the bytes are handed to the socket. */
  abortWithError(err: ToolproofError): Promise<void>;
}

export class OpenStreams {
  private readonly streams = new Set<OpenStream>();

  /** Registers a stream; call the returned function when it ends. */
  add(stream: OpenStream): () => void {
    this.streams.add(stream);
    return () => {
      this.streams.delete(stream);
    };
  }

  /** Unregisters a stream (as the function add() returns does). */
  delete(stream: OpenStream): void {
    this.streams.delete(stream);
  }

  get size(): number {
    return this.streams.size;
  }

  /** Ends every open stream with `err`; resolves when all are flushed or after `waitMs`. */
  async abortAll(err: ToolproofError, waitMs = 1_000): Promise<void> {
    const ending = [...this.streams].map((s) => s.abortWithError(err).catch(() => undefined));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(ending),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}

/**
 * An OpenStream over a raw response. It acts only on a response that is an SSE stream already
 * under way (headers sent, not ended); `cancel` stops whatever feeds it (the upstream request).
 */
export function sseResponseStream(res: ServerResponse, cancel: (err: ToolproofError) => void): OpenStream {
  return {
    abortWithError(err) {
      if (!res.headersSent || res.writableEnded || res.destroyed) return Promise.resolve();
      const type = String(res.getHeader('content-type') ?? '');
      if (!type.startsWith('text/event-stream')) return Promise.resolve();
      cancel(err);
      // The blank line first ends any event a writer left half-written.
      return new Promise<void>((resolve) => {
        res.once('close', resolve);
        res.end(`\n\n${sseErrorEvent(res.req?.url ?? '', err)}`, () => resolve());
      });
    },
  };
}
