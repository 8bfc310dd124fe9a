/**
 * A PDF read lasts as long as its request: a client that leaves while its PDF is being read has
 * its reader's worker terminated at once (pdf.js went on to the document's deadline, 20 s by
 * default, a core burnt for nobody), and its request never goes upstream. Through the server,
 * over a real socket.
 */
import { describe, expect, it } from 'vitest';
import { leaveWhileRead, pdfReadingProxy, slowPdfBase64 } from '../support/pdf-abort.js';

const pair = pdfReadingProxy();

describe('a client that leaves while its PDF is read', () => {
  it('stops the read and sends nothing upstream', async () => {
    const url = `data:application/pdf;base64,${slowPdfBase64()}`;
    const stoppedMs = await leaveWhileRead(
      pair,
      '/v1/chat/completions',
      {
        model: 'm1',
        messages: [
          { role: 'user', content: [{ type: 'file', file: { filename: 'big.pdf', file_data: url } }] },
        ],
      },
      { 'x-request-id': 'left-while-read' },
    );
    // Well before its 20 s deadline: the worker was terminated when the client left.
    expect(stoppedMs).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(pair.upstream.requests).toHaveLength(0);
    // The inspector says why the request has no attempt.
    const view = (await (
      await fetch(`${pair.proxy.origin}/inspect/api/requests/left-while-read`)
    ).json()) as {
      record: {
        status: unknown;
        outcome: string;
        upstreamAttempts: unknown[];
        decisions: Array<{ kind: string; reason: string }>;
      };
    };
    expect(view.record).toMatchObject({ status: 'aborted', outcome: 'failed', upstreamAttempts: [] });
    expect(view.record.decisions).toEqual([
      expect.objectContaining({ kind: 'documents-stopped', reason: expect.stringContaining('client left') }),
    ]);
  }, 30_000);
});
