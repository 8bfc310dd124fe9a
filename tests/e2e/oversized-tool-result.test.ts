/**
 * A tool that returns megabytes (a `cat` of a log, a test run's output) in a session whose client
 * does not cut its own tool output (the OpenAI Agents SDK, an SDK loop): with no
 * `maxToolResultTokens` set, the backend refused every later turn (its window cannot hold the
 * result), and the agent's compaction request, which carries the same result, too: the session
 * was over. With the window known (read from the backend at start-up, or configured), a result
 * the window cannot hold at all is cut to a quarter of it; the session goes on, with the same
 * bytes upstream turn after turn. Through the real server against the simulator enforcing its
 * window as vLLM and llama-server do, with the real SDKs, on the three doors, streamed and not.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCapabilities } from '../../server/capability-probe.js';
import { startStack, type Stack } from '../server/stack.js';

/** ~2.4 MB of log lines: far past an 8k window, however it is counted. */
const BIG = Array.from({ length: 40_000 }, (_, i) => `line ${i}: ${'x'.repeat(50)}`).join('\n');
const MARK = "to fit the model's context window";

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`a ${(BIG.length / 1e6).toFixed(1)} MB tool result, no cap set, ${personality} window 8192 known`, () => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      const sim = {
        personality,
        scenario: 'demo',
        enforceWindow: true,
        maxModelLen: 8192,
        nCtx: 8192,
      } as const;
      const probe = await startStack({ sim });
      // The window as toolproof reads it at start-up (main.ts resolves capabilities before listening).
      const config = await resolveCapabilities(probe.app.toolproof.config);
      await probe.close();
      expect(config.defaults.contextWindow).toBe(8192);
      stack = await startStack({ sim, config: { defaults: config.defaults } });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    });
    afterAll(() => stack.close());

    for (const stream of [false, true]) {
      it(`chat${stream ? ' (streamed)' : ''}: four turns re-sending it, and a compaction request, all answered`, async () => {
        const tools = [
          {
            type: 'function' as const,
            function: {
              name: 'run',
              parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
            },
          },
        ];
        const history: Array<Record<string, unknown>> = [
          { role: 'user', content: 'Show me the build log.' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'run', arguments: '{"cmd":"cat build.log"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: BIG },
        ];
        const sent: string[] = [];
        for (let turn = 0; turn < 4; turn++) {
          stack.sim.reset();
          const params = { model: 'sim', messages: history as never, tools };
          if (stream) {
            const s = await stack.client.chat.completions.create({ ...params, stream: true });
            for await (const _ of s) {
              // drained
            }
          } else await stack.client.chat.completions.create(params);
          sent.push(stack.sim.requests.at(-1)!.rawBody);
          history.push(
            { role: 'assistant', content: `answer ${turn}` },
            { role: 'user', content: `next ${turn}` },
          );
        }
        for (const body of sent) {
          expect(body).toContain(MARK);
          expect(body.length).toBeLessThan(40_000);
        }
        // The result's bytes are the same every turn: the prompt's prefix holds.
        const resultOf = (b: string) =>
          (JSON.parse(b) as { messages: Array<{ role: string; content: unknown }> }).messages.find(
            (m) => m.role === 'tool',
          )!.content;
        expect(new Set(sent.map((b) => JSON.stringify(resultOf(b)))).size).toBe(1);
        // The compaction request (no tools, the whole history) is answered too.
        const summary = await stack.client.chat.completions.create({
          model: 'sim',
          messages: [...history, { role: 'user', content: 'Summarize the conversation so far.' }] as never,
        });
        expect(summary.choices[0]?.message.content).toBeTruthy();
      });

      it(`responses${stream ? ' (streamed)' : ''}: a function_call_output of megabytes`, async () => {
        const params = {
          model: 'sim',
          input: [
            { role: 'user' as const, content: 'Show me the build log.' },
            {
              type: 'function_call' as const,
              call_id: 'c1',
              name: 'run',
              arguments: '{"cmd":"cat build.log"}',
            },
            { type: 'function_call_output' as const, call_id: 'c1', output: BIG },
          ],
          tools: [
            {
              type: 'function' as const,
              name: 'run',
              strict: false,
              parameters: { type: 'object', properties: {} },
            },
          ],
        };
        const res = stream
          ? await stack.client.responses.stream(params).finalResponse()
          : await stack.client.responses.create(params);
        expect(res.status).toBe('completed');
        expect(stack.sim.requests.at(-1)!.rawBody).toContain(MARK);
      });

      it(`messages${stream ? ' (streamed)' : ''}: a tool_result of megabytes`, async () => {
        const params = {
          model: 'sim',
          max_tokens: 100,
          messages: [
            { role: 'user' as const, content: 'Show me the build log.' },
            {
              role: 'assistant' as const,
              content: [
                {
                  type: 'tool_use' as const,
                  id: 'toolu_1',
                  name: 'Bash',
                  input: { command: 'cat build.log' },
                },
              ],
            },
            {
              role: 'user' as const,
              content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: BIG }],
            },
          ],
          tools: [{ name: 'Bash', input_schema: { type: 'object' as const, properties: {} } }],
        };
        const msg = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        expect(msg.type).toBe('message');
        expect(stack.sim.requests.at(-1)!.rawBody).toContain(MARK);
      });
    }

    it('a result the window can hold is left whole', async () => {
      const small = 'x'.repeat(20_000); // ~6,700 tokens by toolproof's estimate: under the 8,192 window
      stack.sim.reset();
      await stack.client.chat.completions
        .create({
          model: 'sim',
          messages: [
            { role: 'user', content: 'go' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 'c1', content: small },
          ],
        })
        .catch(() => undefined); // the backend's own verdict: whatever it is, the result went whole
      expect(stack.sim.requests.at(-1)!.rawBody).toContain(small);
      expect(stack.sim.requests.at(-1)!.rawBody).not.toContain(MARK);
    });
  });
}
