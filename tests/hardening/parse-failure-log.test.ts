/**
 * llama-server's "Failed to parse input at pos N: <model output>" carries the model's own output
 * (a leaked send_email call: the address and the body). When nothing is recovered from it, it is
 * relayed to the client (its own conversation) but its log line keeps only the prefix and the
 * output's length, not the text (up to 300 characters of it before).
 */
import { describe, expect, it } from 'vitest';
import { redactForLog } from '../../server/log-redact.js';
import { logCapture } from '../server/test-utils.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf } from '../support/harness.js';

const OUTPUT = 'I will email alice@example.com: "the vault code is hunter2", signed Bob';
const MESSAGE = `Failed to parse input at pos 12: ${OUTPUT}`;

const { stream, lines } = logCapture();
const pair = proxyInFrontOf(
  (_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 500, message: MESSAGE, type: 'server_error' } }));
  },
  { log: stream },
);

const tool = {
  type: 'function',
  function: { name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string' } } } },
};

describe("llama-server's parse failure in the log", () => {
  it('the request line keeps the prefix and the length, not the model output', async () => {
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'parse-1' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'mail alice' }],
        tools: [tool],
      }),
    });
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('hunter2'); // the client's own conversation
    await new Promise((r) => setTimeout(r, 20));
    const line = lines.find((l) => l.reqId === 'parse-1' && l.msg === 'request')!;
    expect((line.error as { message: string }).message).toBe(
      `Failed to parse input at pos 12: [model output redacted: ${OUTPUT.length} characters]`,
    );
    const all = JSON.stringify(lines);
    expect(all).not.toContain('hunter2');
    expect(all).not.toContain('alice@example.com');
  });

  it('anywhere in a message, and linear in a hostile one', () => {
    expect(redactForLog(`upstream said: ${MESSAGE}`)).toBe(
      `upstream said: Failed to parse input at pos 12: [model output redacted: ${OUTPUT.length} characters]`,
    );
    const s = measureScaling(
      (n) => `${'Failed to parse input at pos 1'.repeat(n)}: x`,
      redactForLog,
      // x4 stays under the 64 KB redactForLog reads (2,048 x 30 characters)
      { from: 128, max: 512 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
