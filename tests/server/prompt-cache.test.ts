/**
 * What the upstream's prefix cache did, counted: toolproof_prompt_tokens_total and
 * toolproof_prompt_cached_tokens_total per model (from usage.prompt_tokens_details.cached_tokens,
 * or llama-server's timings.cache_n when a stream carries no usage), multi-turn requests, and
 * the turn's cached tokens in the log line's harness field.
 */
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { createSimulator } from '../../simulator/index.js';
import { TEST_MODELS, weatherTool } from './stack.js';
import { logCapture } from './test-utils.js';

const SYSTEM = { role: 'system', content: `You are a careful agent. ${'Be precise. '.repeat(80)}` };

function metric(text: string, name: string, model: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{model="${model}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('prompt cache accounting', () => {
  for (const stream of [false, true]) {
    it(`llama-server, ${stream ? 'streamed without include_usage (timings.cache_n)' : 'not streamed (cached_tokens)'}`, async () => {
      const sim = await createSimulator({ personality: 'llama-server', scenario: 'tools' });
      const { stream: logStream, lines } = logCapture();
      const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), {
        logger: { level: 'info', stream: logStream },
      });
      app.toolproof.modelLabels.serve(TEST_MODELS); // as /ready would learn them (see stack.ts)
      try {
        const turn1 = [SYSTEM, { role: 'user', content: 'Weather in Paris?' }];
        const send = (id: string, messages: unknown[]) =>
          app.inject({
            method: 'POST',
            url: '/v1/chat/completions',
            headers: { 'x-request-id': id },
            payload: { model: 'm', messages, tools: [weatherTool], stream },
          });
        expect((await send('t1', turn1)).statusCode).toBe(200);
        const turn2 = [
          ...turn1,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'c1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'Sunny, 21 C' },
        ];
        expect((await send('t2', turn2)).statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 20));
        const served = sim.requests.map((r) => r.cachedTokens ?? 0);
        expect(served[1]).toBeGreaterThan(0);
        const second = lines.find((l) => l.reqId === 't2')?.harness as {
          cachedTokens?: number;
          promptTokens?: number;
        };
        expect(second.cachedTokens).toBe(served[1]);
        expect(second.promptTokens).toBe(sim.requests[1]!.promptTokens);
        const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
        expect(metric(text, 'toolproof_prompt_cached_tokens_total', 'm')).toBe(served[0]! + served[1]!);
        expect(metric(text, 'toolproof_prompt_tokens_total', 'm')).toBe(
          sim.requests[0]!.promptTokens! + sim.requests[1]!.promptTokens!,
        );
        expect(metric(text, 'toolproof_multi_turn_requests_total', 'm')).toBe(1);
      } finally {
        await app.close();
        await sim.close();
      }
    });
  }

  it('vLLM without --enable-prompt-tokens-details reports nothing: nothing is counted', async () => {
    const sim = await createSimulator({ personality: 'vllm', scenario: 'prose' });
    const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url }), { logger: false });
    try {
      await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        payload: { model: 'm', messages: [SYSTEM] },
      });
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metric(text, 'toolproof_prompt_tokens_total', 'm')).toBe(0);
    } finally {
      await app.close();
      await sim.close();
    }
  });
});
