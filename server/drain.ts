/**
 * Backpressure on a raw response: after write() returned false, wait for `drain`, or for
 * `close`: a client that went away never drains, and a writer waiting only for drain would
 * hang for good, holding its upstream body and buffers.
 *
 * A client that stays connected and reads nothing never drains either: it held its request's
 * upstream stream, and its admission slot, for as long as it kept the socket open (one such
 * client per slot left every other key's requests to time out in the queue). With `stallMs`,
 * a wait that sees no drain for that long destroys the response, as if the client had left
 * (its `close` ends the wait; the request is aborted as for any client gone).
 */
import type { ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';

export function untilDrainOrClose(res: Writable, stallMs = 0): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = stallMs > 0 ? setTimeout(() => res.destroy(), stallMs) : undefined;
    timer?.unref();
    const done = () => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * The same bound for a response someone else writes: a non-streamed answer handed over whole
 * (end() already called, the rest waiting in its buffer), or fastify piping the pass-through's
 * upstream body with backpressure. A client that takes none of it for `stallMs` is cut as gone
 * (a piped body's request is then cancelled). After end(), a response reports no need to drain
 * and emits no `drain` (a check on those left a piped body's last bytes, and any whole answer,
 * waiting for good), so progress is read off what is still buffered: cut when two checks in a
 * row find bytes waiting and no fewer than the check before, so after a stall of `stallMs` to
 * twice that. A client that reads, however slowly, is never cut; the timer (one per response,
 * while it lasts) stops when the response is finished or closed.
 */
export function cutWhenUnread(res: ServerResponse, stallMs: number): void {
  if (stallMs <= 0 || res.destroyed || res.writableFinished) return;
  // All of it already went to the socket (a small answer, nearly always): nothing can wait.
  if (res.writableEnded && res.writableLength === 0) return;
  let last = -1;
  const timer = setInterval(() => {
    const left = res.writableLength;
    if (left > 0 && left === last) res.destroy();
    last = left;
  }, stallMs);
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    res.off('finish', stop);
    res.off('close', stop);
  };
  res.on('finish', stop);
  res.on('close', stop);
}
