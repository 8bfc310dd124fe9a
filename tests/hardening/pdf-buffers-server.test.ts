/**
 * A PDF bomb outside the heap, through the server. The reader's worker has a heap limit, but an
 * ArrayBuffer's bytes are not on the heap, and pdf.js decodes a stream whole into one typed array
 * that doubles as it grows: a 33 KB PDF (a 45 KB request) whose font file decodes to 2 GB took
 * the process to 1.5 GB of RSS within the 20 s deadline on a loaded 2-core box, two readers at
 * once twice that, and read as 'timeout' (or 'malformed' past a typed array's longest). The
 * worker now counts the buffers pdf.js makes against a budget (server/documents/pdf-worker.ts):
 * the read ends early as 'memory', the note says so, and the process stays near its heap bounds.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { fontBombPdf, textPdf } from '../support/pdf.js';

const pair = proxyInFrontOf((_req, res) =>
  sendCompletion(res, { role: 'assistant', content: 'done' }, 'stop'),
);

describe('a PDF whose font file decodes to 2 GB', () => {
  it('reads as "needed more memory", its RSS bounded; a plain PDF beside it is read', async () => {
    const file = (name: string, pdf: Buffer) => ({
      type: 'file',
      file: { filename: name, file_data: `data:application/pdf;base64,${pdf.toString('base64')}` },
    });
    const content = [
      { type: 'text', text: 'read these' },
      file('bomb.pdf', fontBombPdf(2)),
      file('plain.pdf', textPdf(['plain text page'])),
    ];
    const before = pair.upstream.requests.length;
    const rssBefore = process.memoryUsage.rss();
    let peak = rssBefore;
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 20);
    const status = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content }] }),
    }).then((r) => r.status);
    clearInterval(sample);
    expect(status).toBe(200);
    const sent = pair.upstream.requests[before]!.body.toString();
    expect(sent).toContain('bomb.pdf');
    expect(sent).toContain('reading it needed more memory than the proxy allows');
    expect(sent).toContain('plain text page');
    // the worker's heap (256 MB) and buffer (256 MB) budgets, with room for a second reader and
    // the test's own heap: 1.5 GB and more before
    expect(peak - rssBefore).toBeLessThan(900 * 1024 * 1024);
  }, 60_000);
});
