/**
 * A per-request abort handle that is cheaper than AbortController (whose EventTarget-based
 * signal costs several microseconds to create on every request). undici accepts any
 * EventEmitter with `aborted` as a request signal, so this one object is both the controller
 * the route holds and the signal the upstream request listens to.
 */
import { EventEmitter } from 'node:events';

export class RequestAbort extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new Error('aborted');
    this.emit('abort');
  }
}

/** What an upstream request can be cancelled by: a RequestAbort or a standard AbortSignal. */
export type AbortLike = RequestAbort | AbortSignal;
