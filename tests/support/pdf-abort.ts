/**
 * A client that leaves while its PDF is read: the setup shared by the tests of a read's lifetime
 * (tests/server/document-lifetime.test.ts through a front door, tests/hardening/
 * count-tokens-pdf-abort.test.ts through count_tokens). A proxy in front of an upstream that
 * answers "done", a PDF whose read lasts seconds, a request that leaves once its read has begun,
 * and how long the reader took to stop after.
 */
import { type ProxyInFront, proxyInFrontOf, sendCompletion } from './harness.js';
import { bombPdf } from './pdf.js';

/** The proxy and its upstream, started before the calling suite's tests (call at its top level). */
export function pdfReadingProxy(): ProxyInFront {
  return proxyInFrontOf((_req, res) => sendCompletion(res, { role: 'assistant', content: 'done' }, 'stop'));
}

/** A PDF whose read takes its reader seconds (a Flate bomb), base64. */
export function slowPdfBase64(): string {
  return bombPdf(200).toString('base64');
}

export async function until(check: () => boolean, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Posts `body` (JSON) to `path` on the proxy, leaves once the reader runs its PDF, and waits (up
 * to 5 s) for the reader to stop: the milliseconds from leaving to stopped. The read's own
 * deadline is 20 s, so well under it means the worker was terminated when the client left.
 */
export async function leaveWhileRead(
  pair: ProxyInFront,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  const reader = pair.proxy.app.toolproof.chatDeps.documents!;
  const gone = new AbortController();
  const sent = fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: gone.signal,
  }).catch((e: unknown) => e);
  await until(() => reader.running === 1, 10_000);
  const t0 = performance.now();
  gone.abort();
  await sent;
  await until(() => reader.running === 0, 5_000);
  return performance.now() - t0;
}
