/**
 * A tool_choice naming a hosted tool (Responses `{"type": "web_search"}`, Messages `{"type":
 * "tool", "name": "web_search"}` for a server tool), with the real SDKs against the simulator as
 * vLLM. The hosted tool is left out upstream (hostedTools: drop), and the choice naming it was a
 * 400 on every turn: toolproof's own on Responses (`tool_choice "web_search" is not supported`),
 * vLLM's on Messages (`The tool specified in tool_choice does not match any of the specified
 * tools`). Now the request goes on as with the tool dropped: the model chooses, and the session
 * goes on, streamed as not.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

type Obj = Record<string, unknown>;
const params = { type: 'object', properties: { path: { type: 'string' } } };

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({ sim: { personality: 'vllm', strictHistory: true } });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  stack.sim.setScenario(() => ({ say: 'Paris is sunny.' }));
});
afterAll(() => stack.close());

const lastUpstream = () =>
  stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as Obj;

describe('tool_choice naming a hosted tool left out: answered, the model choosing', () => {
  for (const stream of [false, true]) {
    it(`Responses${stream ? ', streamed' : ''}: {"type": "web_search"}`, async () => {
      const input: Obj[] = [{ role: 'user', content: 'Weather in Paris?' }];
      for (let turn = 0; turn < 2; turn++) {
        const body = {
          model: 'sim',
          input,
          store: false,
          tools: [{ type: 'function', name: 'Read', parameters: params }, { type: 'web_search' }],
          tool_choice: { type: 'web_search' },
        };
        const r = stream
          ? await stack.client.responses.stream(body as never).finalResponse()
          : await stack.client.responses.create(body as never);
        expect(r.output_text).toBe('Paris is sunny.');
        const sent = lastUpstream();
        expect(JSON.stringify(sent.tool_choice ?? null)).not.toContain('web_search');
        expect((sent.tools as Array<{ function: { name: string } }>)[0]!.function.name).toBe('Read');
        input.push(...(r.output as unknown as Obj[]), { role: 'user', content: 'And tomorrow?' });
      }
    });

    it(`Messages${stream ? ', streamed' : ''}: {"type": "tool", "name": "web_search"} for a server tool`, async () => {
      const messages: Obj[] = [{ role: 'user', content: 'Weather in Paris?' }];
      for (let turn = 0; turn < 2; turn++) {
        const body = {
          model: 'sim',
          max_tokens: 200,
          messages,
          tools: [
            { name: 'Read', input_schema: params },
            { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
          ],
          tool_choice: { type: 'tool', name: 'web_search', disable_parallel_tool_use: true },
        };
        const m = stream
          ? await anthropic.messages.stream(body as never).finalMessage()
          : await anthropic.messages.create(body as never);
        expect(m.content).toEqual([expect.objectContaining({ type: 'text', text: 'Paris is sunny.' })]);
        const sent = lastUpstream();
        expect(JSON.stringify(sent.tool_choice ?? null)).not.toContain('web_search');
        expect(sent.parallel_tool_calls).toBe(false);
        messages.push({ role: 'assistant', content: m.content }, { role: 'user', content: 'And tomorrow?' });
      }
    });
  }

  it("a tool_choice naming a tool the request does not declare is still the client's 400", async () => {
    const err = await stack.client.responses
      .create({ model: 'sim', input: 'hi', tool_choice: { type: 'web_search' } } as never)
      .catch((e: unknown) => e as { status: number; param?: string });
    expect(err).toMatchObject({ status: 400, param: 'tool_choice' });
  });
});
