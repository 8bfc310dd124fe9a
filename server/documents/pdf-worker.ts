/**
 * Extracting a PDF's text in a worker thread, so a hostile or merely huge PDF never stalls the
 * event loop: the worker has a heap limit (resourceLimits) and a deadline, and is terminated
 * when it passes either. One worker per document (about 150 ms to start and load the library,
 * measured); results are cached by content (document-reader.ts), so a session pays once.
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
const { data, maxPages, maxChars, bufferBytes } = workerData;
let buffered = 0;
let overBudget = false;
const returned = new FinalizationRegistry((n) => { buffered -= n; });
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
      if (big) returned.register(this, n);
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
    if (big) returned.register(this, n);
  }
  static [Symbol.hasInstance](x) { return x instanceof OriginalArrayBuffer; }
  static get [Symbol.species]() { return OriginalArrayBuffer; }
};
const { getDocumentProxy } = require(workerData.lib);
const memory = () => ({ kind: 'unreadable', reason: 'memory' });
(async () => {
  let doc;
  try {
    doc = await getDocumentProxy(data, {
      verbosity: 0, isEvalSupported: false, disableFontFace: true, useSystemFonts: false,
      stopAtErrors: false,
    });
  } catch (e) {
    const name = e && e.name;
    parentPort.postMessage(overBudget ? memory() : { kind: 'unreadable', reason: name === 'PasswordException' ? 'encrypted' : 'malformed' });
    return;
  }
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
  // pdf.js may have read on past a refused buffer (a font it could not load): what it gave is
  // not the document's whole text, and nothing says which part is missing.
  parentPort.postMessage(overBudget ? memory() : { kind: 'text', pages, text, truncated });
})().catch(() => parentPort.postMessage(overBudget ? memory() : { kind: 'unreadable', reason: 'malformed' }));
`;

/**
 * The PDF's text, or why it was not read. Never rejects. `signal`: nobody waits for it any more:
 * the worker is terminated at once (it ends as a timeout nobody sees).
 */
export function extractPdf(data: Uint8Array, limits: PdfLimits, signal?: AbortSignal): Promise<DocumentText> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: DocumentText): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
      void worker.terminate();
      resolve(result);
    };
    const cancel = (): void => done({ kind: 'unreadable', reason: 'timeout' });
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        lib: LIB,
        data,
        maxPages: limits.maxPages,
        maxChars: limits.maxChars,
        // buffers outside the heap: as much again as the heap may hold
        bufferBytes: limits.heapMb * 1024 * 1024,
      },
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    // Whatever pdf.js might print is drained, never buffered.
    worker.stdout.resume();
    worker.stderr.resume();
    const timer = setTimeout(() => done({ kind: 'unreadable', reason: 'timeout' }), limits.timeoutMs);
    worker.on('message', (m: DocumentText) => done(m));
    worker.on('error', (err: NodeJS.ErrnoException) =>
      done({ kind: 'unreadable', reason: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'malformed' }),
    );
    worker.on('exit', () => done({ kind: 'unreadable', reason: 'malformed' }));
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
  });
}
