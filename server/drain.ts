/**
 * Backpressure on a raw response: after write() returned false, wait for `drain`, or for
 * `close`: a client that went away never drains, and a writer waiting only for drain would
 * hang for good, holding its upstream body and buffers.
 */
import type { Writable } from 'node:stream';

export function untilDrainOrClose(res: Writable): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
