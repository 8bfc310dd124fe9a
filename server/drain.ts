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
 * The same bound for a response someone else writes (fastify piping the pass-through's upstream
 * body, with backpressure): a client that takes nothing for `stallMs` while the socket buffer
 * stays full is cut as gone, and the pipe cancels the upstream request. Checked on a timer (one
 * per response, while it lasts): cut after two checks in a row find the buffer full with no
 * drain between them, so after a stall of `stallMs` to twice that.
 */
export function cutWhenStalled(res: Writable & { writableNeedDrain: boolean }, stallMs: number): void {
  if (stallMs <= 0 || res.destroyed || res.writableEnded) return;
  let drained = false;
  let stalled = false;
  const onDrain = () => {
    drained = true;
  };
  const timer = setInterval(() => {
    const now = res.writableNeedDrain && !drained;
    if (now && stalled) res.destroy();
    stalled = now;
    drained = false;
  }, stallMs);
  timer.unref();
  res.on('drain', onDrain);
  res.once('close', () => {
    clearInterval(timer);
    res.off('drain', onDrain);
  });
}
