/**
 * Streams open right now, so that the shutdown deadline can end each one honestly (the API's own
 * error event) instead of resetting the connection mid-event. app.ts registers every request's
 * response with its Fastify reply, whose abortWithError is the OpenAI chat framing
 * (`data: {error}` + `data: [DONE]`, what pass-through clients read); a front door whose stream speaks another API registers its own StreamOutput
 * under the same response, replacing that default, so each stream is framed by the code that
 * wrote it, never guessed from the URL. Ending twice is a no-op.
 */
import type { ServerResponse } from 'node:http';
import type { ToolproofError } from '../protocol/errors.js';
import { toErrorBody } from './error-handler.js';
import { SSE_DONE, sseData } from './sse.js';

export interface OpenStream {
  /** Ends the stream with its API's error event; resolves once the bytes are handed to the socket. */
  abortWithError(err: ToolproofError): Promise<void>;
}

export class OpenStreams {
  /** One stream per response: a later registration under the same response replaces the earlier. */
  private readonly streams = new Map<object, OpenStream>();

  /** Registers `stream` for the response `key`; delete(key) when it ends (no closure per request). */
  add(key: object, stream: OpenStream): void {
    this.streams.set(key, stream);
  }

  /**
   * A front door's own stream takes over the entry app.ts registered for the response `key`.
   * Only an entry still there: once the response closed its entry is gone, and a late claim
   * (a client gone before the route ran) would stay in the set forever.
   */
  claim(key: object, stream: OpenStream): void {
    if (this.streams.has(key)) this.streams.set(key, stream);
  }

  /** Unregisters the response `key`. */
  delete(key: object): void {
    this.streams.delete(key);
  }

  /** Open requests (every request registers its response). */
  get size(): number {
    return this.streams.size;
  }

  /** Of those, the ones that are SSE streams under way (toolproof_open_streams). */
  streaming(): number {
    let n = 0;
    for (const key of this.streams.keys()) if (isSseUnderWay(key as ServerResponse)) n++;
    return n;
  }

  /** Ends every open stream with `err`; resolves when all are flushed or after `waitMs`. */
  async abortAll(err: ToolproofError, waitMs = 1_000): Promise<void> {
    const ending = [...this.streams.values()].map((s) => s.abortWithError(err).catch(() => undefined));
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

/** An SSE response whose headers went out and which has not ended. */
function isSseUnderWay(res: ServerResponse): boolean {
  if (typeof res.getHeader !== 'function') return false; // not a response (unit tests key by plain objects)
  if (!res.headersSent || res.writableEnded || res.destroyed) return false;
  return String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
}

/**
 * Ends `res` with `frame` (the API's error event), but only when it is an SSE stream already
 * under way (headers sent, not ended); `cancel` first stops whatever feeds it (the upstream
 * request), so that no writer races the ending.
 */
export function endStreamWith(
  res: ServerResponse,
  cancel: (err: ToolproofError) => void,
  err: ToolproofError,
  frame: (err: ToolproofError) => string,
): Promise<void> {
  if (!isSseUnderWay(res)) return Promise.resolve();
  cancel(err);
  // The blank line first ends any event a writer (a relay of upstream bytes) left half-written.
  return new Promise<void>((resolve) => {
    res.once('close', resolve);
    res.end(`\n\n${frame(err)}`, () => resolve());
  });
}

/** The chat-completions error framing: the error object as an event, then `data: [DONE]`. */
export function chatErrorFrame(err: ToolproofError): string {
  return sseData(JSON.stringify(toErrorBody(err))) + SSE_DONE;
}
