/**
 * Streams still open at the shutdown deadline end with an SSE error event and `data: [DONE]`
 * (the client learns why), not with a reset; the upstream request is cancelled.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { shutdownGracefully } from '../../server/shutdown.js';
import { createSimulator } from '../../simulator/index.js';
import { waitFor } from '../server/stack.js';
import { fakeUpstream } from '../support/harness.js';
import { appWithUnusedConnection } from '../support/unused-connection.js';

async function readUntilEnd(res: Response, onFirst: () => void): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
    if (first) {
      first = false;
      onFirst();
    }
  }
}

/**
 * A stream the simulated upstream stalls after two chunks, on `path`; the app starts its graceful
 * shutdown (300 ms deadline) as soon as the first bytes arrive. Returns what the client read.
 */
async function stalledStreamAtDeadline(
  path: string,
  body: Record<string, unknown>,
): Promise<{ text: string; sim: Awaited<ReturnType<typeof createSimulator>> }> {
  const sim = await createSimulator({
    personality: 'vllm',
    scenario: [{ say: 'one two three four five six seven eight', stallAfterChunks: 2 }],
  });
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, ...body }),
    });
    expect(res.status).toBe(200);
    let closed: Promise<void> | undefined;
    const text = await readUntilEnd(res, () => {
      closed = shutdownGracefully(app, { graceMs: 300 });
    });
    await closed;
    await waitFor(() => sim.aborts.length >= 1);
    return { text, sim };
  } finally {
    await sim.close();
  }
}

describe('streams at the shutdown deadline', () => {
  it('a chat stream gets an error event and [DONE], then the app closes', async () => {
    const { text, sim } = await stalledStreamAtDeadline('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(events.at(-2)!.slice(6)) as { error: { code: string } };
    expect(error.error.code).toBe('TP_ERR_SHUTTING_DOWN');
    // The stalled upstream request was cancelled (recorded when the simulator sees the close).
    expect(sim.aborts.length).toBeGreaterThanOrEqual(1);
  });

  it("a Responses stream ends with the Responses API's own failure events", async () => {
    const { text } = await stalledStreamAtDeadline('/v1/responses', { input: 'hi' });
    const events = text
      .trim()
      .split('\n\n')
      .filter((e) => e !== '')
      .map(
        (e) =>
          JSON.parse(e.split('\ndata: ')[1]!) as { type: string; code?: string; sequence_number: number },
      );
    // The same ending as any failure after the headers: `error`, then `response.failed`,
    // numbered in sequence after what was already sent.
    expect(events.at(-2)).toMatchObject({ type: 'error', code: 'TP_ERR_SHUTTING_DOWN' });
    expect(events.at(-1)!.type).toBe('response.failed');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(text).not.toContain('[DONE]');
  });

  it("a Messages stream ends with Anthropic's own error event, not chat's", async () => {
    const { text } = await stalledStreamAtDeadline('/v1/messages', {
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const last = text.trim().split('\n\n').at(-1)!;
    expect(last.startsWith('event: error\ndata: ')).toBe(true);
    expect(JSON.parse(last.split('\ndata: ')[1]!)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringContaining('shutting down') },
    });
    expect(text).not.toContain('[DONE]');
    expect(text).toContain('event: message_start');
  });

  it('a passed-through stream gets the same ending', async () => {
    const up = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n'); // and then nothing, never ending
    });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: up.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/some/stream`, { method: 'POST' });
      let closed: Promise<void> | undefined;
      const text = await readUntilEnd(res, () => {
        closed = shutdownGracefully(app, { graceMs: 300 });
      });
      await closed;
      expect(text.startsWith('data: {"n":1}\n\n')).toBe(true);
      expect(text).toContain('TP_ERR_SHUTTING_DOWN');
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    } finally {
      await up.close();
    }
  });

  it('without open streams the app closes before the deadline', async () => {
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
      logger: false,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const started = Date.now();
    await shutdownGracefully(app, { graceMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('a connection that never carried a byte does not hold the shutdown', async () => {
    // What an aborted fetch leaves behind: a connection opened and never written to, which
    // Node counts as active, so close() waited for the client (or the deadline) to end it.
    const { app, ended } = await appWithUnusedConnection();
    const started = Date.now();
    await shutdownGracefully(app, { graceMs: 10_000 });
    await ended;
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
