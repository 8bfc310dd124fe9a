/**
 * The reader's workers are reused (server/documents/pdf-worker.ts): a worker that finished a read
 * cleanly takes the next, one that timed out, overran or was cancelled is terminated and the next
 * read gets a fresh one, an idle worker goes away (and never holds the process), and a reused
 * worker reads every document as a fresh one does.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createDocumentReader, DEFAULT_PDF_LIMITS } from '../../server/documents/document-reader.js';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createPdfPool, IDLE_MS, type PdfPool, START_TIMEOUT_MS } from '../../server/documents/pdf-worker.js';
import { bombPdf, encryptedPdf, imageOnlyPdf, manyPagesPdf, textPdf } from '../support/pdf.js';
import { nodeEntry } from '../support/toolproof-process.js';

const url = (b: Buffer) => `data:application/pdf;base64,${b.toString('base64')}`;
const requestOf = (u: string) => ({
  model: 'm',
  messages: [{ role: 'user' as const, content: [{ type: 'file' as const, file: { file_data: u } }] }],
});

type Reader = ReturnType<typeof createDocumentReader>;

/**
 * `pool`, whose first read holds this thread `ms` once it is sent (Atomics.wait: the thread
 * sleeps, the worker runs on), as a long start on a loaded machine would, without a race.
 */
function stalledOnce(pool: PdfPool, ms: number): PdfPool {
  let stalls = 1;
  return {
    extract(data, limits, signal) {
      const reading = pool.extract(data, limits, signal);
      if (stalls-- > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      return reading;
    },
    get started() {
      return pool.started;
    },
    get idle() {
      return pool.idle;
    },
  };
}
async function read(r: Reader, u: string, signal?: AbortSignal) {
  return (await r.prepare(requestOf(u), signal))?.(u);
}

describe('document reader: reused workers', () => {
  it('a second document reads on the same worker, and reads as on a fresh worker, byte for byte', async () => {
    const docs = [
      textPdf(['alpha 1', 'beta (2)']),
      textPdf(['compressed', 'text'], { flate: true }),
      encryptedPdf(),
      Buffer.from('%PDF-1.4 not really'),
      imageOnlyPdf(),
      manyPagesPdf(120),
      textPdf(['last one']),
    ].map(url);
    const reused = createDocumentReader({ concurrency: 1 });
    const got: string[] = [];
    for (const u of docs) got.push(JSON.stringify(await read(reused, u)));
    expect(reused.reads).toBe(docs.length);
    expect(reused.workersStarted).toBe(1);
    // A worker per read, as before reuse.
    const fresh = createDocumentReader({ concurrency: 1, workers: { maxReads: 1 } });
    const want: string[] = [];
    for (const u of docs) want.push(JSON.stringify(await read(fresh, u)));
    expect(fresh.workersStarted).toBe(docs.length);
    expect(got).toEqual(want);
    expect(JSON.parse(got[0]!)).toEqual({
      kind: 'text',
      pages: 2,
      text: ['alpha 1', 'beta (2)'],
      truncated: false,
    });
  }, 60_000);

  it("readers given one pool (buildApp's pdfPool: the test suite's apps) take the worker another left, each with its own cache", async () => {
    const pool = createPdfPool();
    const a = createDocumentReader({ concurrency: 1, pool });
    const b = createDocumentReader({ concurrency: 1, pool });
    const doc = url(textPdf(['shared']));
    expect(await read(a, doc)).toMatchObject({ text: ['shared'] });
    expect(await read(b, doc)).toMatchObject({ text: ['shared'] });
    expect([pool.started, a.reads, b.reads, b.workersStarted]).toEqual([1, 1, 1, 1]);
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
      logger: false,
      pdfPool: pool,
    });
    expect(app.toolproof.chatDeps.documents!.workersIdle).toBe(1);
    await app.close();
  }, 30_000);

  it("a fresh worker's start (the thread, pdf.js loaded: ~0.2 s of CPU) is not the document's time", async () => {
    // The event loop held for longer than the read's deadline once the read is sent: the worker
    // starts and reads meanwhile, and its two messages (ready, then the text) wait together. A
    // deadline that started at the sending has passed by then, and timers run before messages:
    // before, every first read on a fresh worker whose start outlasted the deadline ended as a
    // timeout (on a loaded machine, an ordinary PDF). The hold is twice what a fresh worker's
    // start and read took just before, in this run (~0.3 s quiet; a loaded box's, longer), so the
    // read is over when the loop looks; were it not, it has the whole deadline from its start
    // (1 s). A fixed deadline under a start's own time (150 ms) held a loaded box's cold first
    // read, after the start, to 150 ms, and failed there.
    const probe = createDocumentReader({ concurrency: 1 });
    const t0 = performance.now();
    expect(await read(probe, url(textPdf(['probe'])))).toMatchObject({ text: ['probe'] });
    const fresh = performance.now() - t0;
    const r = createDocumentReader({
      concurrency: 1,
      limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 1_000 },
      pool: stalledOnce(createPdfPool(), Math.max(1_200, 2 * fresh)),
    });
    expect(await read(r, url(textPdf(['first'])))).toMatchObject({ text: ['first'] });
    expect(r.workersStarted).toBe(1);
    // The deadline still holds a read once the worker has started: the same worker takes a bomb,
    // which ends at the read's deadline, long before a start's allowance (30 s) would end it.
    const bomb = url(bombPdf(202));
    const t1 = performance.now();
    const doc = await read(r, bomb);
    expect(doc).toMatchObject({ kind: 'unreadable', reason: 'timeout' });
    expect(performance.now() - t1).toBeLessThan(START_TIMEOUT_MS / 2);
    expect(r.workersStarted).toBe(1);
  }, 60_000);

  it('a worker is retired after maxReads reads', async () => {
    const r = createDocumentReader({ concurrency: 1, workers: { maxReads: 2 } });
    for (const t of ['r1', 'r2', 'r3']) expect(await read(r, url(textPdf([t])))).toMatchObject({ text: [t] });
    expect(r.workersStarted).toBe(2);
  }, 30_000);

  it('a read that times out or is cancelled ends its worker; the next read gets a fresh one that works', async () => {
    const r = createDocumentReader({
      concurrency: 1,
      // The deadline the fresh-worker test above holds a read on a worker just started to (1 s):
      // the bomb runs to it, ~0.5 s of CPU less than at 1.5 s.
      limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 1_000, heapMb: 96 },
    });
    const bomb = url(bombPdf(200));
    expect(await read(r, url(textPdf(['before'])))).toMatchObject({ text: ['before'] });
    expect(r.workersStarted).toBe(1);
    // The reused worker takes the bomb, and ends with it (the deadline, or the heap limit).
    const doc = await read(r, bomb);
    expect(['timeout', 'memory']).toContain(doc?.kind === 'unreadable' ? doc.reason : doc?.kind);
    expect(r.workersIdle).toBe(0);
    expect(await read(r, url(textPdf(['after'])))).toMatchObject({ text: ['after'] });
    expect(r.workersStarted).toBe(2);
    // Cancelled mid-read (its client left): that worker is terminated too.
    const gone = new AbortController();
    // Another bomb: the first one's timeout is cached.
    const cancelled = r.prepare(requestOf(url(bombPdf(201))), gone.signal);
    while (r.running === 0) await new Promise((res) => setTimeout(res, 10));
    gone.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    while (r.running > 0) await new Promise((res) => setTimeout(res, 10));
    expect(r.workersIdle).toBe(0);
    expect(await read(r, url(textPdf(['then'])))).toMatchObject({ text: ['then'] });
    expect(r.workersStarted).toBe(3);
  }, 60_000);

  it('an idle worker goes away after its idle time, and never keeps the process alive', async () => {
    const r = createDocumentReader({ workers: { idleMs: 150 } });
    expect(await read(r, url(textPdf(['idle'])))).toMatchObject({ text: ['idle'] });
    expect(r.workersIdle).toBe(1);
    const end = performance.now() + 5_000;
    while (r.workersIdle > 0 && performance.now() < end) await new Promise((res) => setTimeout(res, 25));
    expect(r.workersIdle).toBe(0);
    // A process that read one PDF exits at once, long before the default idle time ends.
    const child = spawn(process.execPath, nodeEntry('tests/support/pdf-read-once.ts'), {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let readAt = 0;
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (!readAt && out.includes('\n')) readAt = performance.now();
    });
    const code = await new Promise<number | null>((res) => child.on('exit', res));
    const exitedAfter = performance.now() - readAt;
    expect([out.trim(), code]).toEqual(['read text idle 1', 0]);
    expect(exitedAfter).toBeLessThan(IDLE_MS / 2);
  }, 60_000);
});
