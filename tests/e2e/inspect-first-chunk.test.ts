/**
 * A streamed attempt's time to its first chunk, in the inspector (API and page, headless
 * Chromium). vLLM's and llama-server's streams send their response headers before the prompt is
 * read (vLLM's StreamingResponse starts the response, then runs the engine), so an attempt's TTFB
 * (to the headers) says nothing of the prefill a user looks for when a turn is slow: the stream's
 * first chunk does. The upstream here answers its headers at once and its first event 300 ms on.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { chunkEvent, type FakeUpstream, fakeUpstream } from '../support/harness.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

const PREFILL_MS = 300;

let upstream: FakeUpstream;
let stack: Stack;

function headersThenStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  setTimeout(() => {
    res.write(chunkEvent({ role: 'assistant', content: 'Sunny' }));
    res.end(`${chunkEvent({ content: ' today.' }, 'stop')}data: [DONE]\n\n`);
  }, PREFILL_MS);
}

beforeAll(async () => {
  upstream = await fakeUpstream((_req, res) => headersThenStream(res));
  stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url } });
});
afterAll(async () => {
  await stack?.close();
  await upstream?.close();
});

async function streamed(id: string, more: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${stack.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({
      model: 'm1',
      messages: [{ role: 'user', content: 'Weather?' }],
      stream: true,
      ...more,
    }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

describe('a streamed attempt: its time to first chunk beside its TTFB', () => {
  it('the API: firstChunkMs, from sending to the first bytes of the stream, with tools and relayed', async () => {
    // With tools (through the policies' stream chain, forced) and without (relayed as it came).
    await streamed('first-chunk-tools', { tools: [weatherTool] });
    await streamed('first-chunk-relayed', {});
    for (const id of ['first-chunk-tools', 'first-chunk-relayed']) {
      const got = (await (await fetch(`${stack.origin}/inspect/api/requests/${id}`)).json()) as {
        record: { upstreamAttempts: Array<{ ttfbMs: number; firstChunkMs?: number; totalMs: number }> };
      };
      const [a] = got.record.upstreamAttempts;
      expect(a!.ttfbMs).toBeLessThan(PREFILL_MS - 50);
      expect(a!.firstChunkMs).toBeGreaterThanOrEqual(PREFILL_MS - 20);
      expect(a!.firstChunkMs).toBeLessThanOrEqual(a!.totalMs);
    }
  });

  it.skipIf(!chromiumAvailable)('the page: the attempt says its first chunk', async () => {
    const { page, close } = await openPage();
    try {
      await page.goto(`${stack.origin}/inspect#/r/first-chunk-tools`);
      const meta = page.locator('section.attempt[data-attempt="1"] .meta');
      await meta.waitFor();
      const text = (await meta.textContent()) ?? '';
      const ms = /first chunk (\d+) ms/.exec(text);
      expect(ms, text).not.toBeNull();
      expect(Number(ms![1])).toBeGreaterThanOrEqual(PREFILL_MS - 20);
    } finally {
      await close();
    }
  });
});
