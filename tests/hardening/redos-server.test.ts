/**
 * Hardening (issue 8), through the server: a client's tool schema carries `^(a+)+$` and the
 * model's arguments are 30 `a` and a `!`. On the backtracking engine that validation took 13 s+
 * of the one event loop, and /health waited as long. On RE2 both answer at once.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { type FakeUpstream, startFakeUpstream, toolCallCompletion } from '../support/fake-upstream.js';

describe('a ReDoS pattern in a tool schema', () => {
  let upstream: FakeUpstream;
  let app: ToolproofApp;
  let origin: string;
  beforeAll(async () => {
    upstream = await startFakeUpstream((body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(toolCallCompletion(String(body.model), 'lookup', JSON.stringify({ s: `${'a'.repeat(30)}!` })));
    });
    app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  it('the call is judged invalid quickly, and /health is not held up meanwhile', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'lookup',
          parameters: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
        },
      },
    ];
    const start = performance.now();
    const chat = fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools }),
    });
    const health = fetch(`${origin}/health`).then(() => performance.now() - start);
    const res = await chat;
    const chatMs = performance.now() - start;
    expect(res.status).toBe(200);
    // Judged invalid: the corrective retry re-asked the model with the pattern in its feedback.
    expect(upstream.requests.length).toBe(2);
    const retry = upstream.requests[1] as { messages: Array<{ role: string; content: string }> };
    expect(retry.messages.find((m) => m.role === 'tool')?.content).toContain('must match pattern');
    expect(chatMs).toBeLessThan(5000);
    expect(await health).toBeLessThan(5000);
  }, 60_000);
});
