/**
 * Hardening (issue 8), through the server: a client's tool schema carries `^(a+)+$` and the
 * model's arguments are 30 `a` and a `!`. On the backtracking engine that validation took 13 s+
 * of the one event loop, and /health waited as long. On RE2 both answer at once.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOfChat, toolCallCompletion } from '../support/fake-upstream.js';

describe('a ReDoS pattern in a tool schema', () => {
  const pair = proxyInFrontOfChat((body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(toolCallCompletion(String(body.model), 'lookup', JSON.stringify({ s: `${'a'.repeat(30)}!` })));
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
    const chat = fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools }),
    });
    const health = fetch(`${pair.proxy.origin}/health`).then(() => performance.now() - start);
    const res = await chat;
    const chatMs = performance.now() - start;
    expect(res.status).toBe(200);
    // Judged invalid: the corrective retry re-asked the model with the pattern in its feedback.
    expect(pair.upstream.requests.length).toBe(2);
    const retry = pair.upstream.requests[1] as { messages: Array<{ role: string; content: string }> };
    expect(retry.messages.find((m) => m.role === 'tool')?.content).toContain('must match pattern');
    expect(chatMs).toBeLessThan(5000);
    expect(await health).toBeLessThan(5000);
  }, 60_000);
});
