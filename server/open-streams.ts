/**
 * Streams open right now, so that the shutdown deadline can end each one honestly (the API's own
 * error event) instead of resetting the connection mid-event. app.ts registers every request's
 * response with its Fastify reply, whose abortWithError is the chat door's error event
 * (`data: {error}` + `data: [DONE]`, what pass-through clients read: front-doors/chat/errors.ts); a front door whose stream speaks another API registers its own StreamOutput
 * under the same response, replacing that default, so each stream is framed by the code that
 * wrote it, never guessed from the URL. Ending twice is a no-op.
 */
import type { ServerResponse } from 'node:http';
import type { ToolproofError } from '../protocol/errors.js';

export interface OpenStream {
  /** Ends the stream with its API's error event; resolves once the bytes are handed to the socket. */
  abortWithError(err: ToolproofError): Promise<void>;
  /**
   * false: another worker serves this stream and counts it in toolproof_open_streams; this one
   * only passes it on (worker-relay.ts), so the group's sum counts it once.
   */
  readonly counted?: false;
}

/** One registered response: a node of OpenStreams' list, found from the response itself. */
interface Entry {
  key: object | null;
  stream: OpenStream | null;
  prev: Entry | null;
  next: Entry | null;
}

/** Where a registered response keeps its entry (no lookup table: see OpenStreams). */
const kEntry = Symbol('toolproof.openStream');

type Keyed = { [kEntry]?: Entry | undefined };

/**
 * The registered responses, as a doubly linked list whose nodes hang off the responses, not as a
 * Map. Every request registers and unregisters once, so a long-lived Map would churn its hash
 * table, and V8 leaves a rehashed-away table in the old generation still pointing at the
 * responses it held until the next full collection: each rehash dragged tens of finished requests
 * (their whole object graphs) through every young-generation collection into the old one. Here
 * the only long-lived slot written per request is the list head, and a node that leaves the list
 * forgets its neighbours, so nothing dead keeps anything young alive.
 */
export class OpenStreams {
  private head: Entry | null = null;
  private count = 0;

  /** Registers `stream` for the response `key`; delete(key) when it ends (no closure per request). */
  add(key: object, stream: OpenStream): void {
    const keyed = key as Keyed;
    const existing = keyed[kEntry];
    if (existing !== undefined) {
      existing.stream = stream;
      return;
    }
    const entry: Entry = { key, stream, prev: null, next: this.head };
    if (this.head !== null) this.head.prev = entry;
    this.head = entry;
    keyed[kEntry] = entry;
    this.count++;
  }

  /**
   * A front door's own stream takes over the entry app.ts registered for the response `key`.
   * Only an entry still there: once the response closed its entry is gone, and a late claim
   * (a client gone before the route ran) would stay in the list forever.
   */
  claim(key: object, stream: OpenStream): void {
    const entry = (key as Keyed)[kEntry];
    if (entry !== undefined) entry.stream = stream;
  }

  /** Unregisters the response `key`. */
  delete(key: object): void {
    const keyed = key as Keyed;
    const entry = keyed[kEntry];
    if (entry === undefined) return;
    keyed[kEntry] = undefined;
    if (entry.prev !== null) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next !== null) entry.next.prev = entry.prev;
    entry.key = entry.stream = entry.prev = entry.next = null;
    this.count--;
  }

  /** Open requests (every request registers its response). */
  get size(): number {
    return this.count;
  }

  /** Of those, the ones that are SSE streams under way (toolproof_open_streams). */
  streaming(): number {
    let n = 0;
    for (let e = this.head; e !== null; e = e.next)
      if (e.stream?.counted !== false && isSseUnderWay(e.key as ServerResponse)) n++;
    return n;
  }

  /** Ends every open stream with `err`; resolves when all are flushed or after `waitMs`. */
  async abortAll(err: ToolproofError, waitMs = 1_000): Promise<void> {
    const ending: Promise<void>[] = [];
    for (let e = this.head; e !== null; e = e.next)
      if (e.stream !== null) ending.push(e.stream.abortWithError(err).catch(() => undefined));
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
