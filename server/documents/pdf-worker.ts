/**
 * Extracting a PDF's text in a worker thread, so a hostile or merely huge PDF never stalls the
 * event loop: the worker has a heap limit (resourceLimits) and a deadline, and is terminated
 * when it passes either, errs, or is cancelled. Starting one costs ~0.2 s of CPU (the thread and
 * the library's load: 207-214 ms a one-page read), so a worker that finished a read cleanly
 * takes the next one (createPdfPool): kept idle at most IDLE_MS, retired after MAX_READS reads.
 * Results are cached by content (document-reader.ts), so a session pays once per document.
 *
 * The library is unpdf (pdf.js built for servers: no native dependency, no canvas). The worker
 * runs plain JavaScript given as source (`eval`), requiring unpdf by the path this module
 * resolves: the same code under tsx, vitest and the built dist/.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { DocumentText } from '../../protocol/document-text.js';

export interface PdfLimits {
  /** Pages read at most (the first ones); the wrapper says which were not. */
  maxPages: number;
  /** Characters of text kept at most. */
  maxChars: number;
  /** Wall-clock limit for one document. */
  timeoutMs: number;
  /** The worker's old-generation heap limit, and its budget for buffers outside the heap. */
  heapMb: number;
}

const LIB = createRequire(import.meta.url).resolve('unpdf');

// Runs in the worker. pdf.js is told to evaluate nothing (isEvalSupported false), load no fonts
// and stay quiet; each page's text items are joined as pdf.js lays them out (hasEOL: a line
// break), and reading stops at the page or character cap.
//
// Its buffers are bounded too. The heap limit (resourceLimits) does not cover an ArrayBuffer's
// bytes, and pdf.js holds a decoded stream whole in one typed array that doubles as it grows: a
// 33 KB PDF whose font file is Flate then RunLength encoded (2 GB decoded) took the process
// to 1.5 GB of RSS in 20 s on a loaded 2-core box (a faster one gets further), with two readers
// at once. So the typed-array and ArrayBuffer constructors pdf.js sees (subclasses of the
// built-ins, whose instanceof and species are the built-ins') count what they allocate of 64 KiB
// or more while it is alive (a FinalizationRegistry returns it; inside one synchronous decode a
// doubling buffer's garbage is counted until then: at most twice what is held), and refuse past
// the budget (as much as the heap limit): pdf.js gets a RangeError, and the document reads as
// 'memory', even where pdf.js read on without what was refused (a font): that text is not whole.
// Reading ordinary PDFs costs the same (6 reads, CPU of the process: 1.82-2.00 s before,
// 1.90-2.05 s after, alternated).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { bufferBytes } = workerData;
// Whatever pdf.js might print is dropped here, never sent to the server's output or buffered.
// (Piped stdio, drained by the server, kept an unref'd idle worker's process alive.)
for (const stream of [process.stdout, process.stderr]) {
  stream.write = (_chunk, encoding, callback) => {
    const cb = typeof encoding === 'function' ? encoding : callback;
    if (cb) queueMicrotask(() => cb());
    return true;
  };
}
for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace']) console[k] = () => {};
// Per read: each starts at 0 (what an earlier read left to the collector no longer counts, and
// is returned to it only: its generation is over), so a read counts what a fresh worker would.
let generation = 0;
let buffered = 0;
let overBudget = false;
const returned = new FinalizationRegistry(([g, n]) => { if (g === generation) buffered -= n; });
const count = (n) => {
  if (!(n >= 65536)) return false; // NaN too: it would disable the count
  if (buffered + n > bufferBytes) {
    overBudget = true;
    throw new RangeError('PDF buffers past the reader budget');
  }
  buffered += n;
  return true;
};
const OriginalArrayBuffer = ArrayBuffer;
for (const name of ['Uint8Array', 'Uint8ClampedArray', 'Int8Array', 'Uint16Array', 'Int16Array',
  'Uint32Array', 'Int32Array', 'Float32Array', 'Float64Array']) {
  const C = globalThis[name];
  const Counted = class extends C {
    constructor(a, b, c) {
      const n = typeof a === 'number' ? a * C.BYTES_PER_ELEMENT
        : a && !(a instanceof OriginalArrayBuffer) && typeof a.length === 'number' ? a.length * C.BYTES_PER_ELEMENT : 0;
      const big = count(n);
      super(a, b, c);
      if (big) returned.register(this, [generation, n]);
    }
    static [Symbol.hasInstance](x) { return x instanceof C; }
    // what its methods make (subarray, slice, map) are the built-in kind
    static get [Symbol.species]() { return C; }
  };
  globalThis[name] = Counted;
}
globalThis.ArrayBuffer = class extends OriginalArrayBuffer {
  constructor(n, o) {
    const big = count(typeof n === 'number' ? n : 0);
    super(n, o);
    if (big) returned.register(this, [generation, n]);
  }
  static [Symbol.hasInstance](x) { return x instanceof OriginalArrayBuffer; }
  static get [Symbol.species]() { return OriginalArrayBuffer; }
};
const { getResolvedPDFJS } = require(workerData.lib);
// pdf.js loaded at once, and the pool told when it is (the start is not the document's time).
const pdfjs = getResolvedPDFJS();
pdfjs.then(() => parentPort.postMessage({ ready: true }), () => parentPort.postMessage({ ready: true }));
const memory = () => ({ kind: 'unreadable', reason: 'memory' });
async function read(data, maxPages, maxChars) {
  const { getDocument } = await pdfjs;
  const task = getDocument({
    data, verbosity: 0, isEvalSupported: false, disableFontFace: true, useSystemFonts: false,
    stopAtErrors: false,
  });
  let doc;
  try {
    doc = await task.promise;
  } catch (e) {
    // A document that failed to load is destroyed too: pdf.js empties its module-wide caches
    // (every name, ref and command the parser met) only when a document goes. Left, a malformed
    // PDF of 10 MB of distinct names kept ~115 MB of the worker's heap into the next read,
    // another key's, which then overran the heap limit ('memory', and cached as that).
    await task.destroy().catch(() => {});
    const name = e && e.name;
    return { kind: 'unreadable', reason: name === 'PasswordException' ? 'encrypted' : 'malformed' };
  }
  try {
    const pages = doc.numPages;
    const text = [];
    let total = 0;
    let truncated = false;
    for (let i = 1; i <= Math.min(pages, maxPages); i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      let t = '';
      for (const item of content.items) if (typeof item.str === 'string') t += item.str + (item.hasEOL ? '\\n' : '');
      page.cleanup();
      if (total + t.length > maxChars) {
        text.push(t.slice(0, maxChars - total));
        truncated = true;
        break;
      }
      total += t.length;
      text.push(t);
    }
    return { kind: 'text', pages, text, truncated };
  } finally {
    // The worker may read another document: this one's objects go (never an error of the read).
    await doc.destroy().catch(() => {});
  }
}
// One read per message, one at a time (the pool sends the next only after the answer). \`held\`:
// the bytes of this read's buffers still counted alive (the pool retires a worker holding much).
parentPort.on('message', ({ data, maxPages, maxChars }) => {
  generation++;
  buffered = 0;
  overBudget = false;
  read(data, maxPages, maxChars)
    .catch(() => ({ kind: 'unreadable', reason: 'malformed' }))
    // pdf.js may have read on past a refused buffer (a font it could not load): what it gave is
    // not the document's whole text, and nothing says which part is missing.
    .then((doc) => parentPort.postMessage({ doc: overBudget ? memory() : doc, held: buffered }));
});
`;

/**
 * How long a worker that finished a read waits for the next (an unref'd timer: an idle worker
 * never keeps the process alive, and an idle server holds no thread). 5 s covers a burst (a
 * request's 16 PDFs, a queue draining, a session's next turns sent back to back by an agent)
 * while a server with nothing to read gives back the worker's ~23 MB within seconds.
 */
export const IDLE_MS = 5_000;
/**
 * Reads one worker does at most: a new one then (0.2 s once per 32 reads, ~6 ms a read), so
 * whatever pdf.js keeps between documents (its module state, a fragmented heap) never grows on.
 */
export const MAX_READS = 32;

/**
 * How long a fresh worker may take to start (the thread and pdf.js loaded, ~0.2 s of CPU) before
 * its read's deadline starts: a start is toolproof's cost, never the document's, so a loaded
 * machine does not read an ordinary PDF as a timeout. Past it the read ends as one.
 */
export const START_TIMEOUT_MS = 30_000;

/** The messages a worker sends: once started, and one answer a read. */
type Message =
  | { ready: true }
  | {
      doc: DocumentText;
      /** Bytes of the read's large buffers still counted alive when it ended. */
      held: number;
    };

interface PooledWorker {
  readonly worker: Worker;
  readonly heapMb: number;
  reads: number;
  /** pdf.js loaded: a read's deadline starts when it is sent. */
  ready: boolean;
  idle?: NodeJS.Timeout;
}

export interface PdfPoolOptions {
  idleMs?: number;
  maxReads?: number;
}

export interface PdfPool {
  /**
   * The PDF's text, or why it was not read. Never rejects. `signal`: nobody waits for it any
   * more: the worker is terminated at once (it ends as a timeout nobody sees).
   */
  extract(data: Uint8Array, limits: PdfLimits, signal?: AbortSignal): Promise<DocumentText>;
  /** Workers started so far (tests, the bench). */
  readonly started: number;
  /** Workers waiting for a read now. */
  readonly idle: number;
}

/**
 * Workers reused between reads. Only a read that ended with its answer returns its worker (and
 * only while it holds less than a quarter of its buffer budget and has read fewer than maxReads);
 * a timeout, a heap or buffer overrun ('memory'), an error, an exit or a cancel terminates it,
 * and the next read gets a fresh one. At most as many idle as ran at once (the reader's
 * concurrency bounds that).
 */
export function createPdfPool(options: PdfPoolOptions = {}): PdfPool {
  const idleMs = options.idleMs ?? IDLE_MS;
  const maxReads = options.maxReads ?? MAX_READS;
  const idle: PooledWorker[] = [];
  let started = 0;

  const spawn = (heapMb: number): PooledWorker => {
    started++;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // buffers outside the heap: as much again as the heap may hold
      workerData: { lib: LIB, bufferBytes: heapMb * 1024 * 1024 },
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    });
    return { worker, heapMb, reads: 0, ready: false };
  };

  const take = (heapMb: number): PooledWorker => {
    const i = idle.findIndex((w) => w.heapMb === heapMb);
    if (i < 0) return spawn(heapMb);
    const w = idle.splice(i, 1)[0]!;
    w.worker.removeAllListeners('exit').removeAllListeners('error');
    clearTimeout(w.idle);
    w.idle = undefined;
    w.worker.ref();
    return w;
  };

  const release = (w: PooledWorker): void => {
    w.worker.removeAllListeners('message').removeAllListeners('error').removeAllListeners('exit');
    // An idle worker that dies anyway (it should not) is dropped, never handed out.
    const drop = (): void => {
      const i = idle.indexOf(w);
      if (i >= 0) idle.splice(i, 1);
      clearTimeout(w.idle);
    };
    w.worker.once('exit', drop).once('error', () => {
      drop();
      void w.worker.terminate();
    });
    w.worker.unref();
    w.idle = setTimeout(() => {
      drop();
      void w.worker.terminate();
    }, idleMs).unref();
    idle.push(w);
  };

  return {
    get started() {
      return started;
    },
    get idle() {
      return idle.length;
    },
    extract(data, limits, signal) {
      return new Promise((resolve) => {
        const bufferBytes = limits.heapMb * 1024 * 1024;
        let settled = false;
        let w: PooledWorker;
        const done = (result: DocumentText, reuse = false): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', cancel);
          if (reuse) release(w);
          else {
            w.worker.removeAllListeners('message');
            void w.worker.terminate();
          }
          resolve(result);
        };
        const cancel = (): void => done({ kind: 'unreadable', reason: 'timeout' });
        try {
          w = take(limits.heapMb);
        } catch {
          resolve({ kind: 'unreadable', reason: 'malformed' });
          return;
        }
        const timeout = (): void => done({ kind: 'unreadable', reason: 'timeout' });
        let timer = setTimeout(timeout, w.ready ? limits.timeoutMs : START_TIMEOUT_MS);
        w.worker.on('message', (m: Message) => {
          if ('ready' in m) {
            w.ready = true;
            clearTimeout(timer);
            timer = setTimeout(timeout, limits.timeoutMs);
            return;
          }
          w.reads++;
          // A clean end: the worker takes the next read, unless the read overran (its worker
          // may hold what pdf.js could not let go), holds much still, or has read enough.
          const clean = m.doc.kind !== 'unreadable' || m.doc.reason !== 'memory';
          done(m.doc, clean && m.held < bufferBytes / 4 && w.reads < maxReads);
        });
        w.worker.on('error', (err: NodeJS.ErrnoException) =>
          done({
            kind: 'unreadable',
            reason: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'malformed',
          }),
        );
        w.worker.on('exit', () => done({ kind: 'unreadable', reason: 'malformed' }));
        // A copy of the bytes by structured clone (the caller's stay its own).
        w.worker.postMessage({ data, maxPages: limits.maxPages, maxChars: limits.maxChars });
        if (signal?.aborted) cancel();
        else signal?.addEventListener('abort', cancel, { once: true });
      });
    },
  };
}
