/**
 * The PDF readers' queue is shared fairly between keys, through the server: one key's reads
 * holding every place no longer turn another key's PDF into a "busy" note. The app's reader is
 * swapped for one with one reader and two places, so the queue fills with a few PDFs.
 */
import { describe, expect, it } from 'vitest';
import { createDocumentReader, DEFAULT_PDF_LIMITS } from '../../server/documents/document-reader.js';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { bombPdf, textPdf } from '../support/pdf.js';

const KEYS = { hog: 'sk-hog-0000000001', other: 'sk-other-00000002' };
const pair = proxyInFrontOf(
  (_req, res) => sendCompletion(res, { role: 'assistant', content: 'ok' }, 'stop'),
  {
    file: () => ({
      keys: [
        { name: 'hog', key: KEYS.hog },
        { name: 'other', key: KEYS.other },
      ],
    }),
  },
);

const url = (b: Buffer) => `data:application/pdf;base64,${b.toString('base64')}`;

const send = (key: string, pdfs: string[], signal?: AbortSignal) =>
  fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: 'm1',
      messages: [
        {
          role: 'user',
          content: pdfs.map((file_data, i) => ({ type: 'file', file: { filename: `${i}.pdf`, file_data } })),
        },
      ],
    }),
    ...(signal ? { signal } : {}),
  });

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("one key's PDFs filling the readers' queue", () => {
  it("another key's PDF still gets a place and is read", async () => {
    const reader = createDocumentReader({
      concurrency: 1,
      maxQueued: 2,
      limits: { ...DEFAULT_PDF_LIMITS, timeoutMs: 30_000 },
    });
    pair.proxy.app.toolproof.chatDeps.documents = reader;
    const gone = new AbortController();
    const blocking = send(KEYS.hog, [url(bombPdf(200))], gone.signal).catch((e: unknown) => e);
    await until(() => reader.running === 1);
    const hog = send(KEYS.hog, [url(textPdf(['hog-one'])), url(textPdf(['hog-two']))]);
    await until(() => reader.queued === 2);
    const other = send(KEYS.other, [url(textPdf(['other-text']))]);
    await new Promise((r) => setTimeout(r, 100));
    gone.abort();
    await blocking;
    expect((await other).status).toBe(200);
    expect((await hog).status).toBe(200);
    const bodies = pair.upstream.requests.map((r) => r.body.toString());
    // Read, not a note: the other key's document text went upstream.
    expect(bodies.some((b) => b.includes('other-text'))).toBe(true);
    // The hog's newest queued read gave its place: its first document read, the second a note.
    const hogBody = bodies.find((b) => b.includes('hog-one'));
    expect(hogBody).toBeDefined();
    expect(hogBody!.includes('hog-two')).toBe(false);
  }, 60_000);
});
