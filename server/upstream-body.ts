/**
 * One upstream exchange as an undici dispatch handler (the undici 7 handler API), in place of
 * undici's `request()`: that one wraps every response in an AsyncResource and a Readable stream,
 * and its body consumers copy the chunks once more. Here the response is resolved at its headers
 * and its body is a plain chunk queue: read whole (`bytes`, `text`: a small body has usually
 * arrived with its headers, so that is one Buffer and no copy) or chunk by chunk as an async
 * iterable (streams), with backpressure on the socket through the controller.
 *
 * Hazards kept as undici's Readable kept them: a body nobody reads any more must be destroyed
 * (the upstream stops generating); a destroy or an abort never surfaces as an unhandled error
 * (there are no events: failures reach only the reader that waits); a body that is read after
 * it failed rejects with the failure.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { type AbortLike, RequestAbort } from './abort.js';
import type { SecretScrubber, UpstreamSecrets } from './upstream-secrets.js';

/** Bytes queued unread before the socket is paused (the size of a Readable's default buffer). */
const HIGH_WATER = 64 * 1024;

export interface UpstreamHead {
  status: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

type Controller = Dispatcher.DispatchController;

const INERT: Controller = {
  aborted: false,
  paused: false,
  reason: null,
  abort() {},
  pause() {},
  resume() {},
};

/**
 * A response body: a queue of chunks filled by the handler, read once, whole or by iteration.
 */
export class UpstreamBody implements AsyncIterable<Buffer> {
  private chunks: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private failure: Error | null = null;
  /** The reader waiting for the next chunk, the end or a failure. */
  private wake: (() => void) | null = null;
  /** Chunks are dropped as they come (dump, or a whole read past its limit). */
  private discarding = false;
  /** Bytes a dump may still drop before it cancels the request instead (dump's `limit`). */
  private dropBudget = Number.POSITIVE_INFINITY;
  /**
   * A whole read (bytes, partial) must end within this many ms (0: no bound). Set by the
   * Upstream to its idle timeout: a body read whole is one event to the idle clock, as a
   * stream's event is (stream-read.ts QuietClock). undici's bodyTimeout is the silence between
   * two chunks, so a body sent a byte every minute held the request (its admission slot, the
   * client's connection) for as long as the upstream liked.
   */
  wholeWithinMs = 0;

  constructor(
    private readonly controller: Controller,
    /** The declared content-length (NaN when none): only for the byte-order-mark rule. */
    readonly declaredLength: number,
    /** Replaces toolproof's upstream keys echoed in the body (upstream-secrets.ts). */
    private readonly scrubber?: SecretScrubber,
  ) {}

  /**
   * Whether the bytes read may differ from those the upstream sent (its keys replaced, see
   * upstream-secrets.ts): then the upstream's content-length does not count them.
   */
  get rewritten(): boolean {
    return this.scrubber !== undefined;
  }

  /** A body that is already whole (tests, fakes): nothing to pause or cancel. */
  static of(bytes: Buffer | string, declaredLength = Number.NaN): UpstreamBody {
    const body = new UpstreamBody(INERT, declaredLength);
    body.push(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes));
    body.end();
    return body;
  }

  /** @internal handler side */
  push(chunk: Buffer): void {
    if (this.discarding) {
      this.dropBudget -= chunk.length;
      if (this.dropBudget < 0) this.destroy();
      return;
    }
    if (this.scrubber) {
      chunk = this.scrubber.push(chunk);
      if (chunk.length === 0) return;
    }
    this.chunks.push(chunk);
    this.queued += chunk.length;
    if (this.queued > HIGH_WATER && this.wake === null) this.controller.pause();
    this.notify();
  }

  /** @internal handler side */
  end(): void {
    const tail = this.scrubber?.end();
    if (tail && !this.discarding) {
      this.chunks.push(tail);
      this.queued += tail.length;
    }
    this.ended = true;
    this.notify();
  }

  /** @internal handler side */
  fail(err: Error): void {
    if (this.ended || this.failure) return;
    this.failure = err;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    if (wake) {
      this.wake = null;
      wake();
    }
  }

  /**
   * Waits for the next chunk, the end or a failure, resuming a paused socket. The wake-up is
   * registered before the resume: undici's resume() runs the parser on the bytes it already holds
   * synchronously, so the rest of a body and its end can arrive inside that call. Registered
   * after, that wake-up was lost and the parser, paused again by the next chunk, stayed paused for
   * ever (a paused parser never reaches its body timeout either): every chunked body over
   * HIGH_WATER hung.
   */
  private waitForMore(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      if (this.controller.paused) this.controller.resume();
    });
  }

  /** True once the whole body is here (or it failed): reading it costs no wait. */
  get complete(): boolean {
    return this.ended || this.failure !== null;
  }

  /**
   * The whole body as one Buffer, or null when it passed `limit` bytes (the request is then
   * cancelled and what was read is dropped). Rejects with the transport's error.
   */
  async bytes(limit = Number.POSITIVE_INFINITY): Promise<Buffer | null> {
    const timer = this.wholeTimer();
    try {
      for (;;) {
        if (this.queued > limit) {
          this.destroy();
          return null;
        }
        if (this.failure) throw this.failure;
        if (this.ended) return this.take();
        await this.waitForMore();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Cuts the body at `wholeWithinMs` from now (what arrived stays queued for partial). */
  private wholeTimer(): NodeJS.Timeout | undefined {
    const ms = this.wholeWithinMs;
    if (ms <= 0 || this.ended || this.failure) return undefined;
    const timer = setTimeout(() => {
      if (this.ended || this.failure) return;
      const err = new WholeBodyTimeout(ms);
      this.failure = err;
      this.controller.abort(err);
      this.notify();
    }, ms);
    timer.unref();
    return timer;
  }

  /** What arrived before a failure or the limit: for error bodies, which are only shown to people. */
  async partial(limit: number): Promise<Buffer> {
    const timer = this.wholeTimer();
    try {
      return await this.partialRead(limit);
    } finally {
      clearTimeout(timer);
    }
  }

  private async partialRead(limit: number): Promise<Buffer> {
    for (;;) {
      if (this.queued > limit) {
        // Whole chunks only, as the stream reader did: the one that crossed the limit is dropped.
        let size = 0;
        let n = 0;
        while (n < this.chunks.length && size + this.chunks[n]!.length <= limit)
          size += this.chunks[n++]!.length;
        this.chunks.length = n;
        this.queued = size;
        const got = this.take();
        this.destroy();
        return got;
      }
      if (this.failure || this.ended) return this.take();
      await this.waitForMore();
    }
  }

  /** Empties the queue into one Buffer (no copy for a single chunk; the array is reused). */
  private take(): Buffer {
    const chunks = this.chunks;
    const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.queued);
    chunks.length = 0;
    this.queued = 0;
    return whole;
  }

  /**
   * Reads and drops the rest of the body (the connection stays reusable); never rejects. With
   * `limit` (bytes) and `ms`, a rest longer than that, or slower, cancels the request instead.
   */
  async dump(limit = Number.POSITIVE_INFINITY, ms = 0): Promise<void> {
    this.discarding = true;
    this.dropBudget = limit - this.queued;
    this.chunks = [];
    this.queued = 0;
    if (this.dropBudget < 0) this.destroy();
    if (this.ended || this.failure) return;
    const timer = ms > 0 ? setTimeout(() => this.destroy(), ms) : undefined;
    timer?.unref();
    while (!this.ended && !this.failure) await this.waitForMore();
    clearTimeout(timer);
  }

  /**
   * Stops reading: cancels the upstream request if it is still running. Safe at any time, any
   * number of times; a reader still waiting gets the error.
   */
  destroy(err?: Error): void {
    this.discarding = true;
    this.chunks = [];
    this.queued = 0;
    if (!this.ended && !this.failure) {
      const reason = err ?? new BodyDestroyedError();
      this.failure = reason;
      this.controller.abort(reason);
      this.notify();
    }
  }

  /**
   * Chunk by chunk. A plain iterator, not a generator: its return() (a reader that stops early:
   * break, throw, a Readable.from destroyed) cancels the request at once, even while it waits.
   */
  [Symbol.asyncIterator](): AsyncIterator<Buffer, undefined> {
    return {
      next: () => this.next(),
      return: () => {
        if (!this.ended) this.destroy();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  private async next(): Promise<IteratorResult<Buffer, undefined>> {
    for (;;) {
      if (this.chunks.length > 0) {
        // Everything queued, as one read (as Readable.read() gives it): an upstream sends one
        // HTTP chunk per SSE event, and the stream driver writes to the client once per read,
        // so a read per chunk would multiply the loop turns and the client's syscalls.
        const chunk = this.take();
        if (this.controller.paused) this.controller.resume();
        return { done: false, value: chunk };
      }
      if (this.failure) throw this.failure;
      if (this.ended) return { done: true, value: undefined };
      await this.waitForMore();
    }
  }
}

/** A body read whole that was not whole within its time (UpstreamBody.wholeWithinMs). */
export class WholeBodyTimeout extends Error {
  override name = 'WholeBodyTimeout';
  readonly code = 'TP_UPSTREAM_WHOLE_BODY_TIMEOUT';
  constructor(readonly ms: number) {
    super(`The upstream response body was not whole within ${ms} ms.`);
  }
}

/** The error a reader gets from a body destroyed before its end without a reason. */
class BodyDestroyedError extends Error {
  override name = 'AbortError';
  readonly code = 'UND_ERR_ABORTED';
  constructor() {
    super('The upstream response body was destroyed before its end.');
  }
}

/**
 * The handler of one dispatch: resolves with the head (status, headers, body) or rejects with the
 * transport's error before it; later errors go to the body. An abort of `signal` cancels the
 * request at any point (before the connection, while waiting for headers, mid-body).
 */
export class ExchangeHandler implements Dispatcher.DispatchHandler {
  private controller: Controller | null = null;
  private body: UpstreamBody | null = null;
  private settled = false;
  private readonly onAbort: () => void;

  constructor(
    private readonly signal: AbortLike,
    private readonly resolve: (head: UpstreamHead) => void,
    private readonly reject: (err: Error) => void,
    /** Called once when the exchange is over (body ended, failed or cancelled). */
    private onSettle?: () => void,
    private readonly secrets?: UpstreamSecrets,
  ) {
    this.onAbort = () => {
      const reason = abortReason(this.signal);
      if (this.controller) this.controller.abort(reason);
      else this.fail(reason);
    };
    addAbortListener(signal, this.onAbort);
  }

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(abortReason(this.signal));
  }

  onResponseStart(controller: Controller, statusCode: number, headers: IncomingHttpHeaders): void {
    // undici keeps the raw header lines on the controller for handlers that want them: views
    // into the socket's first read, which would hold that whole read (and the events that came
    // with the headers) for as long as a stream stays open. The parsed headers are all we use.
    controller.rawHeaders = null;
    if (statusCode < 200) return; // 1xx: informational, the real head follows
    this.secrets?.scrubHeaders(headers);
    const declared = headers['content-length'];
    const body = new UpstreamBody(
      controller,
      declared === undefined ? Number.NaN : Number(declared),
      this.secrets?.scrubber(),
    );
    this.body = body;
    this.settled = true;
    this.resolve({ status: statusCode, headers, body });
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.done();
    this.body?.end();
  }

  /** Also called with no controller when dispatch() itself throws. */
  onResponseError(_controller: Controller | null, err: Error): void {
    this.done();
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.body) this.body.fail(err);
    else if (!this.settled) {
      this.settled = true;
      this.reject(err);
    }
  }

  private done(): void {
    removeAbortListener(this.signal, this.onAbort);
    const settle = this.onSettle;
    this.onSettle = undefined;
    settle?.();
  }
}

function abortReason(signal: AbortLike): Error {
  const reason = signal.reason;
  if (reason instanceof Error) return reason;
  return new BodyDestroyedError();
}

function addAbortListener(signal: AbortLike, fn: () => void): void {
  if (signal instanceof RequestAbort) signal.onAbort(fn);
  else signal.addEventListener('abort', fn, { once: true });
}

function removeAbortListener(signal: AbortLike, fn: () => void): void {
  if (signal instanceof RequestAbort) signal.offAbort(fn);
  else signal.removeEventListener('abort', fn);
}
