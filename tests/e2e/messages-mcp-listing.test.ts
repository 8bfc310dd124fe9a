/**
 * An MCP connector's `mcp_tool_listing` block in an assistant turn (@anthropic-ai/sdk 1.14's
 * BetaMCPToolListingBlock: "send the assistant message back unchanged, this block included"), so
 * it comes back on every later turn of the session. Before, a 400 "Unsupported content block
 * type" on each of them: the session died. Now a line naming the server and its tools, through
 * the real server and the Anthropic SDK against the strict llama-server simulator, three turns.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

describe('mcp_tool_listing in history', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server', strictHistory: true } as never });
  });
  afterAll(() => stack.close());

  it('three turns, each answered, the listing a line the model reads', async () => {
    const client = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0 });
    const messages: Anthropic.Beta.BetaMessageParam[] = [
      { role: 'user', content: 'What can the wiki do?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'mcp_tool_listing',
            mcp_server_name: 'wiki',
            tools: [{ name: 'search_pages', input_schema: { type: 'object' } }],
          } as never,
          { type: 'text', text: 'It can search pages.' },
        ],
      },
    ];
    for (let turn = 1; turn <= 3; turn++) {
      messages.push({ role: 'user', content: `go on ${turn}` });
      const r = await client.beta.messages.create(
        { model: 'sim', max_tokens: 64, messages },
        { headers: { 'x-sim-scenario': 'echo' } },
      );
      expect(r.stop_reason).toBe('end_turn');
      messages.push({ role: 'assistant', content: r.content as Anthropic.Beta.BetaContentBlockParam[] });
    }
    const sent = stack.sim.requests.filter((q) => q.path.endsWith('/chat/completions'));
    expect(sent).toHaveLength(3);
    expect(sent[0]!.rawBody).toContain(
      '[MCP server wiki listed its tools on the API this conversation began on: search_pages]\\nIt can search pages.',
    );
  });
});
