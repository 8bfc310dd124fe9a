/**
 * A per-request abort handle that is cheaper than AbortController (whose EventTarget-based
 * signal costs several microseconds to create on every request) and than an EventEmitter (an
 * events object per request, another whenever its last listener goes). Its only listener is
 * the upstream exchange in flight (server/upstream-body.ts): one at a time, rarely more.
 */
import { ToolproofError } from '../protocol/errors.js';

export class RequestAbort {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new Error('aborted');
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const fn of listeners) fn();
  }

  /** Calls `fn` once, when aborted (never if removed first, or if already aborted). */
  onAbort(fn: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(fn);
  }

  offAbort(fn: () => void): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const i = listeners.indexOf(fn);
    if (i >= 0) listeners.splice(i, 1);
  }
}

/**
 * The reason a request is cancelled when its client goes away: a ToolproofError of its own code,
 * so that every path that classifies failures (the error handlers, the stream drivers, the
 * upstream adapter) passes it on as it is: an abort, never toolproof's own failure (not counted
 * in toolproof_internal_errors_total, not logged at error level).
 */
export function clientClosed(): ToolproofError {
  return new ToolproofError('TP_ERR_CLIENT_CLOSED');
}

/** What an upstream request can be cancelled by: a RequestAbort or a standard AbortSignal. */
export type AbortLike = RequestAbort | AbortSignal;

/** Calls `fn` once when `signal` aborts; returns what removes it. */
export function listenAbort(signal: AbortLike, fn: () => void): () => void {
  if (signal instanceof RequestAbort) {
    signal.onAbort(fn);
    return () => signal.offAbort(fn);
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}
