/** Scenario fixtures (tests/fixtures/simulator/*.json) run turn by turn against both personalities. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { chat, messageOf, scenarioHeader, WEATHER_TOOL } from './helpers.js';

interface Expectation {
  status?: number;
  content?: string;
  content_contains?: string;
  tool_calls?: string[];
  finish_reason?: string;
  reasoning_content?: string;
}

const DIR = join(import.meta.dirname, '../fixtures/simulator');
const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({
    file: f,
    ...(JSON.parse(readFileSync(join(DIR, f), 'utf8')) as { scenario: unknown; expect: Expectation[] }),
  }));

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`${personality}: scenario fixtures`, () => {
    let sim: Simulator;
    beforeAll(async () => {
      sim = await createSimulator({ personality });
    });
    afterAll(() => sim.close());

    it.each(fixtures.map((f) => [f.file, f] as const))('%s', async (_file, fixture) => {
      const messages: Array<Record<string, unknown>> = [
        { role: 'user', content: 'Weather in Paris and Lyon?' },
      ];
      for (const want of fixture.expect) {
        const r = await chat(sim, { messages, tools: [WEATHER_TOOL] }, scenarioHeader(fixture.scenario));
        expect(r.status).toBe(want.status ?? 200);
        // A failed turn adds an assistant note so the script moves on, as a client retry loop would.
        if (r.status !== 200) {
          messages.push({ role: 'assistant', content: '(error)' }, { role: 'user', content: 'try again' });
          continue;
        }
        const msg = messageOf(r);
        const content = (msg.content as string | null) ?? '';
        if (want.content !== undefined) expect(content).toBe(want.content);
        if (want.content_contains !== undefined) expect(content).toContain(want.content_contains);
        const calls = (msg.tool_calls as Array<{ id: string; function: { name: string } }> | undefined) ?? [];
        if (want.tool_calls) expect(calls.map((c) => c.function.name)).toEqual(want.tool_calls);
        if (want.finish_reason)
          expect((r.json.choices as Array<{ finish_reason: string }>)[0]?.finish_reason).toBe(
            want.finish_reason,
          );
        if (want.reasoning_content) expect(msg.reasoning_content).toBe(want.reasoning_content);
        const finish = (r.json.choices as Array<{ finish_reason: string }>)[0]?.finish_reason;
        if (finish === 'length') {
          // A cut call has invalid-JSON arguments, which llama-server rejects in history (500): drop it.
          messages.push({ role: 'assistant', content: '(truncated)' }, { role: 'user', content: 'go on' });
          continue;
        }
        messages.push({ ...msg });
        for (const c of calls) messages.push({ role: 'tool', tool_call_id: c.id, content: '21C' });
        if (calls.length === 0) messages.push({ role: 'user', content: 'thanks' });
      }
    });
  });
}
