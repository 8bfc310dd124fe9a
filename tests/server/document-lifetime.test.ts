/**
 * A PDF read lasts as long as its request: a client that leaves while its PDF is being read has
 * its reader's worker terminated at once (pdf.js went on to the document's deadline, 20 s by
 * default, a core burnt for nobody), and its request never goes upstream. Through the server,
 * over a real socket.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';
import { bombPdf } from '../support/pdf.js';

const pair = proxyInFrontOf((_req, res) =>
  sendCompletion(res, { role: 'assistant', content: 'done' }, 'stop'),
);

async function until(check: () => boolean, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a client that leaves while its PDF is read', () => {
  it('stops the read and sends nothing upstream', async () => {
    const reader = pair.proxy.app.toolproof.chatDeps.documents!;
    const url = `data:application/pdf;base64,${bombPdf(200).toString('base64')}`;
    const gone = new AbortController();
    const sent = fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'left-while-read' },
      body: JSON.stringify({
        model: 'm1',
        messages: [
          { role: 'user', content: [{ type: 'file', file: { filename: 'big.pdf', file_data: url } }] },
        ],
      }),
      signal: gone.signal,
    }).catch((e: unknown) => e);
    await until(() => reader.running === 1, 10_000);
    const t0 = performance.now();
    gone.abort();
    await sent;
    // Well before its 20 s deadline: the worker was terminated when the client left.
    await until(() => reader.running === 0, 5_000);
    expect(performance.now() - t0).toBeLessThan(5_000);
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
