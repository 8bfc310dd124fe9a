/**
 * Requests of a key waiting for an upstream slot (the replica's admission queue, admission.ts or
 * the group's): a reload that revokes their key (or gives its name another secret) refuses them
 * at once with the 401, as their next request would be, and they leave the queue without reaching
 * the upstream. Before, only a wait in the key's own queue (keys.ts KeyLimits.reloaded) was
 * refused: a request already past it waited out the replica's queue (up to its `queueTimeoutMs`,
 * 120 s by default) and was then served on the revoked key.
 *
 * Only a request's first way to the upstream is held to it: once something of a request reached
 * the model, its retries and fallbacks finish on the configuration it started with, as its open
 * stream does (docs/operations.md, "Reload").
 */
import { ToolproofError } from '../protocol/errors.js';
import { type AbortLike, listenAbort, RequestAbort } from './abort.js';
import type { ApiKeyEntry } from './config-keys.js';

/** One request's key, as the admission request carries it (one object for all its attempts). */
export interface KeyWaitTicket {
  readonly waits: KeyWaits;
  readonly entry: ApiKeyEntry;
  /** Set once the request was admitted upstream: later attempts are no longer revocable. */
  reached: boolean;
}

const identity = (k: ApiKeyEntry): string => `${k.name}\u0000${k.key}`;

export class KeyWaits {
  private readonly waiting = new Set<{ entry: ApiKeyEntry; signal: RequestAbort }>();
  /** The keys in force (name and secret); undefined: not told yet (every key is in force). */
  private current: Set<string> | undefined;

  /**
   * The signal the request waits on for its slot: aborted with the request's own, or with the
   * 401 when a reload revokes its key meanwhile (already revoked: at once). `leave` once the
   * wait is over, admitted or not.
   */
  join(entry: ApiKeyEntry, signal: AbortLike): { signal: RequestAbort; leave(): void } {
    const mine = new RequestAbort();
    const place = { entry, signal: mine };
    if (this.current !== undefined && !this.current.has(identity(entry))) {
      mine.abort(new ToolproofError('TP_ERR_UNAUTHORIZED'));
      return { signal: mine, leave() {} };
    }
    const unlisten = listenAbort(signal, () => mine.abort(signal.reason));
    if (signal.aborted) mine.abort(signal.reason);
    this.waiting.add(place);
    return {
      signal: mine,
      leave: () => {
        unlisten();
        this.waiting.delete(place);
      },
    };
  }

  /** A reload's keys (server/reload.ts): the waits of a key no longer among them are refused. */
  reloaded(keys: readonly ApiKeyEntry[]): void {
    const current = new Set(keys.map(identity));
    this.current = current;
    for (const place of [...this.waiting])
      if (!current.has(identity(place.entry))) {
        this.waiting.delete(place);
        place.signal.abort(new ToolproofError('TP_ERR_UNAUTHORIZED'));
      }
  }

  /** Requests waiting now (tests). */
  get size(): number {
    return this.waiting.size;
  }
}
