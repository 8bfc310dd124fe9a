/**
 * count_tokens reads a request's PDFs as the Messages door would send them (the same reader and
 * queue), so its reads belong to its request too: a client that leaves while its document is
 * read has the worker terminated at once. Before, count_tokens read with no signal: the worker
 * ran on to the document's 20 s deadline for nobody, and a client posting 16 PDFs at a time and
 * leaving (count_tokens counts against no key's limits) kept both readers busy and the 32 queue
 * slots full, so every other client's PDFs read as "busy" notes. Through the server, over a real
 * socket.
 */
import { describe, expect, it } from 'vitest';
import { leaveWhileRead, pdfReadingProxy, slowPdfBase64 } from '../support/pdf-abort.js';

const pair = pdfReadingProxy();

describe('a client that leaves count_tokens while its PDF is read', () => {
  it('stops the read', async () => {
    const data = slowPdfBase64();
    const stoppedMs = await leaveWhileRead(pair, '/v1/messages/count_tokens', {
      model: 'm1',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
            { type: 'text', text: 'summarize' },
          ],
        },
      ],
    });
    // Well before its 20 s deadline: the worker was terminated when the client left.
    expect(stoppedMs).toBeLessThan(5_000);
  }, 30_000);

  it('still counts a document whose client stays', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm1',
        messages: [{ role: 'user', content: 'hello there' }],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });
});
