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
  /** The worker's old-generation heap limit. */
  heapMb: number;
}

const LIB = createRequire(import.meta.url).resolve('unpdf');

// Runs in the worker. pdf.js is told to evaluate nothing (isEvalSupported false), load no fonts
// and stay quiet; each page's text items are joined as pdf.js lays them out (hasEOL: a line
// break), and reading stops at the page or character cap.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { getDocumentProxy } = require(workerData.lib);
const { data, maxPages, maxChars } = workerData;
(async () => {
  let doc;
  try {
    doc = await getDocumentProxy(data, {
      verbosity: 0, isEvalSupported: false, disableFontFace: true, useSystemFonts: false,
      stopAtErrors: false,
    });
  } catch (e) {
    const name = e && e.name;
    parentPort.postMessage({ kind: 'unreadable', reason: name === 'PasswordException' ? 'encrypted' : 'malformed' });
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
  parentPort.postMessage({ kind: 'text', pages, text, truncated });
})().catch(() => parentPort.postMessage({ kind: 'unreadable', reason: 'malformed' }));
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
      workerData: { lib: LIB, data, maxPages: limits.maxPages, maxChars: limits.maxChars },
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
