/**
 * The log line of a non-streamed pass-through chat request (no tools) still carries the
 * upstream's usage: it is now read from the relayed bytes only when the line is written.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator } from '../../simulator/index.js';

describe('usage on the log line of a relayed body', () => {
  it('a pass-through chat completion logs the upstream usage, and the body is relayed unchanged', async () => {
    const sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean))
          lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), {
      logger: { level: 'info', stream },
    });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'x-request-id': 'relay-usage-1' },
        payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.statusCode).toBe(200);
      const body = res.json() as { usage: { total_tokens: number } };
      await new Promise((r) => setTimeout(r, 20));
      const line = lines.find((l) => l.reqId === 'relay-usage-1');
      expect(line?.harness).toMatchObject({ final: 'passthrough' });
      expect(line?.usage).toEqual(body.usage);
      expect(body.usage.total_tokens).toEqual(expect.any(Number));
    } finally {
      await app.close();
      await sim.close();
    }
  });
});
