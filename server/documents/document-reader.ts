/**
 * The PDFs of a request, read before its request policies run: each chat `file` part holding a
 * PDF data URL is extracted off the event loop (pdf-worker.ts) and its result kept by the
 * content's hash, so later turns of the session, which send the same document again, get the
 * same result without reading it again (the documents policy then writes the same bytes: the
 * prompt's prefix holds). The cache is bounded in entries and in characters held; what it drops
 * is read again when it comes back (same library, same result, except after a timeout).
 *
 * A read belongs to the requests waiting for it: when the last of them is gone (its client left)
 * it leaves the queue, or its worker is terminated, and nothing of it is cached. The queue of
 * reads waiting for a worker is bounded process-wide: past it, a document reads as a note that
 * says so (the request goes on; a later turn reads it when the readers have room), never a
 * failed request.
 *
 * Shared fairly between the keys (a read's owner: the key of the request that asked first): a
 * free worker takes the oldest read of the owner with the fewest reads running, and a full queue
 * makes room for an owner holding fewer of its places than another by turning that other's newest
 * queued read into the note. One key's requests (16 PDFs each) can no longer hold every worker
 * and place, so that every other key's PDFs read as "busy" notes, or wait behind all of them.
 */
import { createHash } from 'node:crypto';
import {
  DOCUMENT_MAX_CHARS,
  type DocumentLookup,
  type DocumentText,
  isPdfType,
  REQUEST_MAX_PDFS,
} from '../../protocol/document-text.js';
import { base64Size, fileFields, splitDataUrl } from '../../protocol/file-part.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { StringMap, StringSet } from '../../protocol/string-set.js';
import { type AbortLike, clientClosed, listenAbort } from '../abort.js';
import { createPdfPool, type PdfLimits, type PdfPool, type PdfPoolOptions } from './pdf-worker.js';

/** What every PDF of a request past its first REQUEST_MAX_PDFS reads as. */
const TOO_MANY: DocumentText = Object.freeze({ kind: 'unreadable', reason: 'too-many' });
/** A document that found the queue full (never cached: a later turn reads it). */
const BUSY: DocumentText = Object.freeze({ kind: 'unreadable', reason: 'busy' });
/** What a read nobody waits for any more ends as (never cached, never seen). */
const CANCELLED: DocumentText = Object.freeze({ kind: 'unreadable', reason: 'timeout' });

/** A PDF larger than this (decoded) is not read: a note says so. */
export const MAX_PDF_BYTES = 20 * 1024 * 1024;

export const DEFAULT_PDF_LIMITS: PdfLimits = Object.freeze({
  maxPages: 100,
  maxChars: DOCUMENT_MAX_CHARS,
  timeoutMs: 20_000,
  heapMb: 256,
});

export interface DocumentReaderOptions {
  limits?: PdfLimits;
  /** Documents read at once, process-wide (each is a worker thread). */
  concurrency?: number;
  /** Documents waiting for a reader, process-wide; past it a document reads as a note. */
  maxQueued?: number;
  /** Results kept (by content hash). */
  cacheEntries?: number;
  /** Characters of text the cache holds at most, over all entries. */
  cacheChars?: number;
  /** Reusing workers between reads (idle time, reads per worker): pdf-worker.ts's defaults. */
  workers?: PdfPoolOptions;
  /**
   * Workers shared with other readers, in place of a pool of the reader's own (`workers` is then
   * not read): the test suite's apps of one process share one (tests/support/pdf-pool.ts).
   */
  pool?: PdfPool;
}

export interface DocumentReader {
  /**
   * The lookup for this request's PDFs, once each is read (or known unreadable); undefined when it
   * has none. `signal`: the request's; when it aborts, this rejects (TP_ERR_CLIENT_CLOSED) and
   * the reads only it waited for stop. `onLeft`: called then, at once (before the response's
   * record and log line are written), so that they can say why the request never went upstream.
   */
  prepare(
    request: ChatCompletionRequest,
    signal?: AbortLike,
    /** Whose request it is (its key's name): the queue is shared fairly between owners. */
    owner?: string,
    onLeft?: () => void,
  ): Promise<DocumentLookup | undefined>;
  /** Documents actually read (cache misses), for tests and the bench. */
  readonly reads: number;
  /** Worker threads started (a reused worker is not started again), for tests and the bench. */
  readonly workersStarted: number;
  /** Workers kept idle for the next read now (tests). */
  readonly workersIdle: number;
  /** Documents being read now, and waiting for a reader (tests). */
  readonly running: number;
  readonly queued: number;
}

/** One document's read, shared by the requests that wait for it. */
interface Read {
  readonly key: string;
  /** The key of the request that asked for it first ('' without keys). */
  readonly owner: string;
  /** The document as sent: decoded only when its read starts (a queued read holds no copy). */
  readonly base64: string;
  /** Requests waiting for it; at 0 it is cancelled. */
  users: number;
  state: 'queued' | 'running' | 'done';
  readonly done: Promise<DocumentText>;
  finish(doc: DocumentText): void;
  /** Terminates its worker (set while running). */
  stop?: () => void;
}

function textSize(doc: DocumentText): number {
  return doc.kind === 'text' ? doc.text.reduce((n, t) => n + t.length, 0) + 64 : 64;
}

/**
 * Every PDF data URL of the request's messages, once. A StringSet: V8 hashes a string past
 * 16,383 characters by its length alone, and 1,000 data URLs of 20 KB alike but for their ends
 * cost 3.2 s of CPU in a Set (and the lookup's Map of them), 250 of them 136 ms.
 */
function pdfDataUrls(request: ChatCompletionRequest): string[] {
  const out = new StringSet();
  if (!Array.isArray(request.messages)) return [];
  for (const m of request.messages) {
    if (!Array.isArray(m?.content)) continue;
    for (const part of m.content) {
      if (part?.type !== 'file') continue;
      const data = fileFields(part)?.file_data;
      const split = data ? splitDataUrl(data) : undefined;
      if (data && split && isPdfType(split.mediaType)) out.add(data);
    }
  }
  return [...out];
}

export function createDocumentReader(options: DocumentReaderOptions = {}): DocumentReader {
  const limits = options.limits ?? DEFAULT_PDF_LIMITS;
  const concurrency = options.concurrency ?? 2;
  const maxQueued = options.maxQueued ?? 32;
  const maxEntries = options.cacheEntries ?? 256;
  const maxChars = options.cacheChars ?? 64 * 1024 * 1024;
  // Insertion order is recency: a hit is deleted and set again.
  const cache = new Map<string, DocumentText>();
  let cachedChars = 0;
  const inFlight = new Map<string, Read>();
  const queue: Read[] = [];
  // Reads running per owner (the next to start is of the owner with the fewest).
  const runningBy = new Map<string, number>();
  let running = 0;
  let reads = 0;
  const pool = options.pool ?? createPdfPool(options.workers);

  const remember = (key: string, doc: DocumentText): void => {
    cache.set(key, doc);
    cachedChars += textSize(doc);
    for (const [k, v] of cache) {
      if (cache.size <= maxEntries && cachedChars <= maxChars) break;
      cache.delete(k);
      cachedChars -= textSize(v);
    }
  };

  const countBy = (reads: readonly Read[]): Map<string, number> => {
    const n = new Map<string, number>();
    for (const r of reads) n.set(r.owner, (n.get(r.owner) ?? 0) + 1);
    return n;
  };

  /**
   * Out of the queue: the oldest read of the owner with the fewest running, another owner than
   * `ended`'s (whose read just ended) at a tie (at most 32 looked at).
   */
  const next = (ended: string): Read | undefined => {
    let best = -1;
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < queue.length; i++) {
      const owner = queue[i]!.owner;
      const n = (runningBy.get(owner) ?? 0) + (owner === ended ? 0.5 : 0);
      if (n < fewest) {
        fewest = n;
        best = i;
      }
    }
    return best < 0 ? undefined : queue.splice(best, 1)[0];
  };

  /**
   * A full queue's place for `owner`: the newest queued read of the owner holding the most places,
   * when that is at least two more than `owner` holds, ends as the busy note. False: no place.
   */
  const makeRoom = (owner: string): boolean => {
    const held = countBy(queue);
    let most = '';
    let mostHeld = 0;
    for (const [o, n] of held)
      if (n > mostHeld) {
        most = o;
        mostHeld = n;
      }
    if (mostHeld < (held.get(owner) ?? 0) + 2) return false;
    for (let i = queue.length - 1; i >= 0; i--) {
      const read = queue[i]!;
      if (read.owner !== most) continue;
      queue.splice(i, 1);
      inFlight.delete(read.key);
      read.finish(BUSY);
      return true;
    }
    return false;
  };

  const start = (read: Read): void => {
    running++;
    runningBy.set(read.owner, (runningBy.get(read.owner) ?? 0) + 1);
    reads++;
    read.state = 'running';
    const stop = new AbortController();
    read.stop = () => stop.abort();
    const decoded = Buffer.from(read.base64, 'base64');
    // A view on its own copy of the bytes: the worker gets them by structured clone.
    const bytes = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.length);
    const ended = (doc: DocumentText): void => {
      running--;
      const left = runningBy.get(read.owner)! - 1;
      if (left === 0) runningBy.delete(read.owner);
      else runningBy.set(read.owner, left);
      // A cancelled read's result (a terminated worker's) is nobody's and not the document's.
      if (read.users > 0) {
        remember(read.key, doc);
        inFlight.delete(read.key);
      }
      read.finish(doc);
      const then = next(read.owner);
      if (then) start(then);
    };
    // extract never rejects, but a read that cannot even start must not keep its slot.
    pool
      .extract(bytes, limits, stop.signal)
      .then(ended, () => ended({ kind: 'unreadable', reason: 'malformed' }));
  };

  /** The request no longer waits for `read`: at its last user it stops (or leaves the queue). */
  const leave = (read: Read): void => {
    if (read.state === 'done' || --read.users > 0) return;
    inFlight.delete(read.key);
    if (read.state === 'queued') {
      queue.splice(queue.indexOf(read), 1);
      read.finish(CANCELLED);
    } else read.stop?.();
  };

  /** The document's text at once (cached, too large, no room), or the read to wait for. */
  const lookup = (dataUrl: string, owner: string): DocumentText | Read => {
    const key = createHash('sha256').update(dataUrl).digest('hex');
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    const pending = inFlight.get(key);
    if (pending) {
      pending.users++;
      return pending;
    }
    const { base64 } = splitDataUrl(dataUrl)!;
    if (base64Size(base64) > MAX_PDF_BYTES) return { kind: 'unreadable', reason: 'too-large' };
    if (running >= concurrency && queue.length >= maxQueued && !makeRoom(owner)) return BUSY;
    let finish!: (doc: DocumentText) => void;
    const done = new Promise<DocumentText>((resolve) => {
      finish = resolve;
    });
    const read: Read = {
      key,
      owner,
      base64,
      users: 1,
      state: 'queued',
      done,
      finish(doc) {
        this.state = 'done';
        finish(doc);
      },
    };
    inFlight.set(key, read);
    if (running < concurrency) start(read);
    else queue.push(read);
    return read;
  };

  return {
    get reads() {
      return reads;
    },
    get workersStarted() {
      return pool.started;
    },
    get workersIdle() {
      return pool.idle;
    },
    get running() {
      return running;
    },
    get queued() {
      return queue.length;
    },
    prepare(request, signal, owner = '', onLeft) {
      const urls = pdfDataUrls(request);
      if (urls.length === 0) return Promise.resolve(undefined);
      if (signal?.aborted) return Promise.reject(clientClosed());
      // The first REQUEST_MAX_PDFS distinct ones, in the request's order (the same ones on every
      // turn, cached or not); the others are not read at all.
      const first = urls.slice(0, REQUEST_MAX_PDFS);
      const found = first.map((u) => lookup(u, owner));
      const lookupOf = (results: readonly DocumentText[]): DocumentLookup => {
        const byUrl = new StringMap<DocumentText>();
        first.forEach((u, i) => {
          byUrl.set(u, results[i]!);
        });
        for (let i = first.length; i < urls.length; i++) byUrl.set(urls[i]!, TOO_MANY);
        return (fileData) => byUrl.get(fileData);
      };
      const waiting = found.filter((f): f is Read => 'done' in f);
      if (waiting.length === 0) return Promise.resolve(lookupOf(found as DocumentText[]));
      return new Promise((resolve, reject) => {
        let left = false;
        const unlisten = signal
          ? listenAbort(signal, () => {
              left = true;
              for (const read of waiting) leave(read);
              onLeft?.();
              reject(clientClosed());
            })
          : undefined;
        void Promise.all(found.map((f) => ('done' in f ? f.done : f))).then((results) => {
          unlisten?.();
          if (!left) resolve(lookupOf(results));
        });
      });
    },
  };
}
