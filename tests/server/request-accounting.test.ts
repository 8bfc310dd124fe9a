/**
 * What a request leaves behind besides its answer, now counted off the hot path: the log line of
 * a non-streamed pass-through chat request still carries the upstream's usage (read from the
 * relayed bytes only when the line is written), and the per-request counters of a forced request
 * (hot series, handed to prom-client on a scrape) still reach /metrics.
 */
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator } from '../../simulator/index.js';
import { startStack, weatherTool } from './stack.js';
import { logCapture } from './test-utils.js';

describe('usage on the log line of a relayed body', () => {
  it('a pass-through chat completion logs the upstream usage, and the body is relayed unchanged', async () => {
    const sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    const { stream, lines } = logCapture();
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

describe('per-request counters of a forced request', () => {
  it('forced, final answer and response kind are on /metrics after each request', async () => {
    const stack = await startStack({ sim: { scenario: 'prose' } });
    try {
      for (let i = 1; i <= 2; i++) {
        const r = await stack.client.chat.completions.create({
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
          tools: [weatherTool],
        });
        expect(r.choices[0]?.message.content).toEqual(expect.any(String));
        const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
        expect(metrics).toContain(`toolproof_forced_total{model="m",tool_choice="required"} ${i}`);
        expect(metrics).toContain(`toolproof_final_answers_total{model="m"} ${i}`);
        expect(metrics).toContain(`toolproof_responses_total{model="m",kind="content",api="chat"} ${i}`);
      }
    } finally {
      await stack.close();
    }
  });
});
