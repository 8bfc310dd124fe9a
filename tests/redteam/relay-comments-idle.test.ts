/**
 * TOOLPROOF_IDLE_TIMEOUT_MS on a stream is the longest wait between two events: SSE comments
 * and blank lines alone do not keep it alive (docs/configuration.md), as the front doors read
 * it (QuietClock). The /v1/completions relay passed bytes on without that clock: an upstream
 * that answered its first event and then only `: ping` held the client's stream, and the
 * admission slot it took, for as long as it kept pinging.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const FIRST =
  'data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":"hi","finish_reason":null}]}\n\n';

const pair = proxyInFrontOf(
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(FIRST);
    const timer = setInterval(() => res.write(': ping\n\n'), 50);
    res.on('close', () => clearInterval(timer));
  },
  { env: { TOOLPROOF_IDLE_TIMEOUT_MS: '500' } },
);

describe('/v1/completions streamed, an upstream that only pings after its first event', () => {
  it('ends after the idle timeout with the OpenAI error event, the first event relayed', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', prompt: 'hi', stream: true }),
      signal: AbortSignal.timeout(6_000),
    });
    const text = await res.text();
    expect(text.startsWith(FIRST)).toBe(true);
    expect(text).toMatch(/"code":"TP_ERR_UPSTREAM_TIMEOUT"/);
    expect(text).toContain('stalled');
  });
});
