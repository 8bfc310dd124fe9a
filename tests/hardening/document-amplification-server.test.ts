/**
 * Many PDFs in one request, through the server.
 *
 * Distinct ones: each is read by a worker of its own (~0.2 s of CPU even for one line), so 50 in
 * a 44 KB body took 8.9 s of CPU and a body limit's worth would have kept both readers busy for an
 * hour, every other request's PDFs waiting behind. A request gets its first REQUEST_MAX_PDFS read.
 *
 * One small PDF sent many times: a 4 KB PDF of compressed
 * text reads as a whole document cap's worth (200k characters), and each copy was written into
 * the prompt: 1,000 copies (a 5.7 MB body) sent 200 MB upstream, held the loop 6 s and took the
 * process to 1 GB of RSS; the body limit's worth would have gone past V8's longest string. What
 * one request's documents add is now bounded (REQUEST_DOCUMENTS_MAX_CHARS); the rest are notes.
 */
import { describe, expect, it } from 'vitest';
import { REQUEST_DOCUMENTS_MAX_CHARS, REQUEST_MAX_PDFS } from '../../protocol/document-text.js';
import { cpuBound, healthLatencyDuring } from './loop-probe.js';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { bombPdf, textPdf } from '../support/pdf.js';

const pair = proxyInFrontOf((_req, res) =>
  sendCompletion(res, { role: 'assistant', content: 'done' }, 'stop'),
);

describe('one small PDF of compressed text, 300 times in one request', () => {
  it('adds at most the request bound of text: the rest are notes, and /health answers', async () => {
    const pdf = bombPdf(1); // ~4 KB, its text past the 200k-character cap of one document
    const url = `data:application/pdf;base64,${pdf.toString('base64')}`;
    const content = [
      { type: 'text', text: 'read these' },
      ...Array.from({ length: 300 }, () => ({ type: 'file', file: { filename: 'a.pdf', file_data: url } })),
    ];
    const before = pair.upstream.requests.length;
    const m = await healthLatencyDuring(
      pair.proxy.origin,
      fetch(`${pair.proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content }] }),
      }).then((r) => r.status),
    );
    expect(m.value).toBe(200);
    const sent = pair.upstream.requests[before]!.body;
    // 300 x 200k characters before (60 MB); the bound, the notes and the JSON around them now
    expect(sent.length).toBeLessThan(REQUEST_DOCUMENTS_MAX_CHARS + 300 * 400 + 64 * 1024);
    const text = sent.toString();
    expect(text).toContain('[document: a.pdf (PDF, 1 page');
    expect(text).toContain('already hold what the proxy adds to one prompt');
    expect(m.cpuMs).toBeLessThan(cpuBound(m.cpuMs, (f) => 1000 * f));
  }, 60_000);
});

describe(`${REQUEST_MAX_PDFS + 8} distinct one-line PDFs in one request`, () => {
  it(`reads the first ${REQUEST_MAX_PDFS}, in order; the others are notes, never read`, async () => {
    const n = REQUEST_MAX_PDFS + 8;
    const content = Array.from({ length: n }, (_, i) => ({
      type: 'file',
      file: {
        filename: `d${i}.pdf`,
        file_data: `data:application/pdf;base64,${textPdf([`document number ${i}`]).toString('base64')}`,
      },
    }));
    const documents = pair.proxy.app.toolproof.chatDeps.documents!;
    const reads = documents.reads;
    const before = pair.upstream.requests.length;
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content }] }),
    });
    expect(res.status).toBe(200);
    expect(documents.reads - reads).toBe(REQUEST_MAX_PDFS);
    const sent = pair.upstream.requests[before]!.body.toString();
    expect(sent).toContain(`document number ${REQUEST_MAX_PDFS - 1}`);
    expect(sent).not.toContain(`document number ${REQUEST_MAX_PDFS}`);
    expect(sent.split('more PDFs than the proxy reads in one').length - 1).toBe(8);
  }, 60_000);
});
