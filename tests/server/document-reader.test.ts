/**
 * Bad documents cost bounded time and memory and end in a note, never a crash or a hang: the
 * reader runs pdf.js in a worker with a heap limit and a deadline (server/documents/).
 */
import { describe, expect, it } from 'vitest';
import { createDocumentReader, DEFAULT_PDF_LIMITS } from '../../server/documents/document-reader.js';
import { cpuBound, processCpuMs } from '../hardening/loop-probe.js';
import { bombPdf, encryptedPdf, imageOnlyPdf, manyPagesPdf, textPdf } from '../support/pdf.js';

const url = (b: Buffer) => `data:application/pdf;base64,${b.toString('base64')}`;
// The default deadline (20 s): these reads must finish, and a 10,000-page PDF outlasted 4 s on a
// box at load 12. The deadline itself is tested with a reader of its own (the bomb).
const reader = createDocumentReader({ limits: { ...DEFAULT_PDF_LIMITS, heapMb: 96 } });

async function read(pdf: Buffer) {
  const u = url(pdf);
  const lookup = await reader.prepare({
    model: 'm',
    messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: u } }] }],
  });
  return lookup?.(u);
}

describe('document reader', () => {
  it('reads text page by page, once per content (cached)', async () => {
    const pdf = textPdf(['alpha 1', 'beta (2)']);
    expect(await read(pdf)).toEqual({
      kind: 'text',
      pages: 2,
      text: ['alpha 1', 'beta (2)'],
      truncated: false,
    });
    const before = reader.reads;
    await read(pdf);
    expect(reader.reads).toBe(before);
  }, 30_000);

  it('encrypted, malformed and image-only PDFs give a reason or empty pages, no throw', async () => {
    expect(await read(encryptedPdf())).toEqual({ kind: 'unreadable', reason: 'encrypted' });
    expect(await read(Buffer.from('%PDF-1.4 not really'))).toEqual({
      kind: 'unreadable',
      reason: 'malformed',
    });
    const img = await read(imageOnlyPdf());
    expect(img?.kind === 'text' && img.text.join('').trim()).toBe('');
  }, 30_000);

  it('a 50 MB PDF is not read at all; a 1,000-page one only its first 100 pages', async () => {
    const t0 = processCpuMs();
    expect(await read(Buffer.alloc(50 * 1024 * 1024, 0x20))).toEqual({
      kind: 'unreadable',
      reason: 'too-large',
    });
    // Quickly (the 67 MB data URL is only measured): 3 s of the process's CPU time, the reader's
    // worker threads' included. Wall time crossed 3 s on a loaded box (3.6 s at load 21 in a full
    // run, 4.5 s beside other suites); the CPU time is what a read would cost.
    const spent = processCpuMs() - t0;
    expect(spent).toBeLessThan(cpuBound(spent, (f) => 3000 * f));
    // Ten times the page cap: the cap's branch as 10,000 pages took it (1.1 s of CPU to build and
    // read those at load ~15, 0.18 s these).
    const many = await read(manyPagesPdf(1_000));
    expect(many?.kind === 'text' && [many.pages, many.text.length]).toEqual([1_000, 100]);
  }, 60_000);

  it('a decompression bomb ends at the deadline or the heap limit', async () => {
    // Its own reader with a short deadline: a 200 MB bomb outlasts 4 s of pdf.js too (it ended
    // at that deadline, burning a core the while).
    const short = createDocumentReader({ limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 1_500, heapMb: 96 } });
    const bomb = url(bombPdf(200));
    const t0 = performance.now();
    const lookup = await short.prepare({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: bomb } }] }],
    });
    const doc = await lookup?.(bomb);
    expect(['timeout', 'memory']).toContain(doc?.kind === 'unreadable' ? doc.reason : doc?.kind);
    expect(performance.now() - t0).toBeLessThan(15_000);
  }, 60_000);
});

/** A request of one PDF each: `pdfs` data URLs. */
const requestOf = (...pdfs: string[]) => ({
  model: 'm',
  messages: [
    { role: 'user' as const, content: pdfs.map((u) => ({ type: 'file' as const, file: { file_data: u } })) },
  ],
});

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('document reader: a read belongs to its requests', () => {
  it('a client that leaves stops its read: its worker is terminated, nothing cached, the next read starts', async () => {
    // One reader, a long deadline: the bomb would hold it for 30 s.
    const r = createDocumentReader({ concurrency: 1, limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 30_000 } });
    const bomb = url(bombPdf(200));
    const small = url(textPdf(['after the bomb']));
    const gone = new AbortController();
    const first = r.prepare(requestOf(bomb), gone.signal);
    // Queued behind it, for a client that stays.
    const second = r.prepare(requestOf(small));
    await until(() => r.running === 1 && r.queued === 1);
    const t0 = performance.now();
    gone.abort();
    await expect(first).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    // The queued read got the reader at once, not after the bomb's 30 s.
    const lookup = await second;
    expect(lookup?.(small)).toMatchObject({ kind: 'text', text: ['after the bomb'] });
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.reads).toBe(2);
    // Nothing of the stopped read was kept: the bomb is read again when it comes again.
    const again = new AbortController();
    const third = r.prepare(requestOf(bomb), again.signal);
    await until(() => r.running === 1);
    expect(r.reads).toBe(3);
    again.abort();
    await expect(third).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    await until(() => r.running === 0);
  }, 60_000);

  it('a queued read whose client left leaves the queue, never read; one another request waits for goes on', async () => {
    const r = createDocumentReader({ concurrency: 1, limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 30_000 } });
    const bomb = url(bombPdf(200));
    const shared = url(textPdf(['shared']));
    const alone = url(textPdf(['alone']));
    const blocker = new AbortController();
    const blocking = r.prepare(requestOf(bomb), blocker.signal);
    const a = new AbortController();
    const b = new AbortController();
    const left = r.prepare(requestOf(shared, alone), a.signal);
    const stays = r.prepare(requestOf(shared), b.signal);
    await until(() => r.queued === 2);
    a.abort();
    await expect(left).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    // `alone` was only the leaver's: out of the queue. `shared` is still waited for.
    expect(r.queued).toBe(1);
    blocker.abort();
    await expect(blocking).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    expect((await stays)?.(shared)).toMatchObject({ kind: 'text', text: ['shared'] });
    expect(r.reads).toBe(2); // the bomb and `shared`; `alone` never
  }, 60_000);

  it('a full queue degrades the document to a note, and the request goes on', async () => {
    const r = createDocumentReader({
      concurrency: 1,
      maxQueued: 1,
      limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 30_000 },
    });
    const bomb = url(bombPdf(200));
    const queued = url(textPdf(['queued']));
    const late = url(textPdf(['late']));
    const stop = new AbortController();
    const blocking = r.prepare(requestOf(bomb), stop.signal);
    const waiting = r.prepare(requestOf(queued));
    await until(() => r.running === 1 && r.queued === 1);
    // No room: a note at once, not a wait and not an error.
    const full = await r.prepare(requestOf(late));
    expect(full?.(late)).toEqual({ kind: 'unreadable', reason: 'busy' });
    stop.abort();
    await expect(blocking).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    expect((await waiting)?.(queued)).toMatchObject({ kind: 'text' });
    // Not cached: read when it comes again and there is room.
    expect((await r.prepare(requestOf(late)))?.(late)).toMatchObject({ kind: 'text', text: ['late'] });
  }, 60_000);
  it("one key's reads cannot take every place: a full queue makes room for another key, whose read goes next", async () => {
    const r = createDocumentReader({
      concurrency: 1,
      maxQueued: 2,
      limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 30_000 },
    });
    const bomb = url(bombPdf(200));
    const [a1, a2, b] = ['a1', 'a2', 'b'].map((t) => url(textPdf([t]))) as [string, string, string];
    const stop = new AbortController();
    const blocking = r.prepare(requestOf(bomb), stop.signal, 'hog');
    await until(() => r.running === 1);
    const order: string[] = [];
    const hog = r.prepare(requestOf(a1, a2), undefined, 'hog').then((l) => {
      order.push('hog');
      return l;
    });
    await until(() => r.queued === 2);
    // The queue is full of the hog's reads: the other key gets a place (the hog's newest read
    // becomes the note), not a note of its own.
    const other = r.prepare(requestOf(b), undefined, 'other').then((l) => {
      order.push('other');
      return l;
    });
    expect(r.queued).toBe(2);
    stop.abort();
    await expect(blocking).rejects.toMatchObject({ code: 'TP_ERR_CLIENT_CLOSED' });
    expect((await other)?.(b)).toMatchObject({ kind: 'text', text: ['b'] });
    const hogs = await hog;
    expect(hogs?.(a1)).toMatchObject({ kind: 'text', text: ['a1'] });
    expect(hogs?.(a2)).toEqual({ kind: 'unreadable', reason: 'busy' });
    // The worker the hog's read left went to the other key first, not to the hog's next read.
    expect(order).toEqual(['other', 'hog']);
    // A key alone may still fill the queue (no note while nobody else waits).
    const r2 = createDocumentReader({ concurrency: 1, maxQueued: 2 });
    const [c1, c2, c3] = ['c1', 'c2', 'c3'].map((t) => url(textPdf([t]))) as [string, string, string];
    const alone = await r2.prepare(requestOf(c1, c2, c3), undefined, 'alone');
    expect([c1, c2, c3].map((u) => alone?.(u)?.kind)).toEqual(['text', 'text', 'text']);
  }, 60_000);
});
