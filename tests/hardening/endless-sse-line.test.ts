/**
 * Hardening (issue 8), through the server: an upstream SSE line that never ends is cut at the
 * framer's bound and the client's stream ends with an error event, instead of buffering without
 * bound (the framer's side: tests/server/sse-parser.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOfChat } from '../support/fake-upstream.js';

describe('through the server: an upstream line that never ends', () => {
  const pair = proxyInFrontOfChat((_body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n',
    );
    // 17 MiB of one data line, no newline, in 64 KiB writes; then hold the socket open.
    const piece = 'z'.repeat(64 * 1024);
    let sent = 0;
    const pump = (): void => {
      while (sent < 17 * 16) {
        sent++;
        if (!res.write(sent === 1 ? `data: ${piece}` : piece)) {
          res.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });

  it('ends the client stream with a 502-class TP_ERR_UPSTREAM_BAD_RESPONSE error event', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.length).toBeLessThan(1024 * 1024);
    expect(text).toContain('TP_ERR_UPSTREAM_BAD_RESPONSE');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }, 30_000);
});

describe('through the server: one event of millions of empty data lines', () => {
  // 12M `data:` lines (72 MB): each was counted at one character, so the event stayed within the
  // 16 MiB bound while its list of lines held ~230 MB of heap (306 MB at 16M lines).
  const pair = proxyInFrontOfChat((_body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const piece = 'data:\n'.repeat(10_000);
    let sent = 0;
    const pump = (): void => {
      while (sent < 1_200) {
        sent++;
        if (!res.write(piece)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end('\ndata: [DONE]\n\n');
    };
    pump();
  });

  it('is cut at the bound: the error event, the heap not grown by the lines', async () => {
    const before = process.memoryUsage().heapUsed;
    let peak = 0;
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed - before);
    }, 10);
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    clearInterval(sample);
    expect(text).toContain('server-sent event larger than');
    expect(text).toContain('TP_ERR_UPSTREAM_BAD_RESPONSE');
    expect(peak).toBeLessThan(100 * 1024 * 1024);
  }, 60_000);
});
