/**
 * One PDF reader pool for every app a test worker builds (`startStack`, `startProxy`,
 * `proxyInFrontOf`: `buildApp`'s `pdfPool`). Each app made a pool of its own, so every app that
 * read a PDF started a worker thread and loaded pdf.js again (~0.2 s of CPU, more on a loaded
 * box); the suite's workers run file after file in one process (`isolate: false`), and their apps
 * now take the worker an earlier app's clean read left. What a pool's worker keeps between reads
 * is what the product's own reuse keeps (pdf-worker.ts: a read that overran, was cancelled or
 * timed out terminates its worker; 32 reads at most a worker), so a test sees the reads a
 * long-running server does. Idle workers wait a minute (unref'd: they never keep the worker
 * process alive) instead of 5 s, the gap between two files that read PDFs.
 *
 * The tests of the reader and its pool themselves (tests/server/document-reader*.test.ts,
 * redteam/pdf-worker-leftovers) build readers of their own, with pools of their own: they count
 * the workers started and the reads.
 */
import { createPdfPool, type PdfPool } from '../../server/documents/pdf-worker.js';

let pool: PdfPool | undefined;

export function sharedPdfPool(): PdfPool {
  pool ??= createPdfPool({ idleMs: 60_000 });
  return pool;
}
