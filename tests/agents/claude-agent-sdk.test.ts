/**
 * The Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`, from the agents cache): its `query()`
 * (streamed messages; it runs the Claude Code binary its platform package ships, on Messages) in
 * tests/agents/sdk/claude-agent-sdk.mjs, run through `toolproof launch claude-agent-sdk -- node
 * claude-agent-sdk.mjs TASK`; and the program's own tool, an in-process MCP server. Claude Code
 * cannot be pointed at a chat-completions backend, so there is no direct run.
 */
import { expect, it } from 'vitest';
import { agentsInfo, runCase } from './lib/case.js';
import { agentCases, describeAgents, expectPass, expectPrefix } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

describeAgents(`Claude Agent SDK ${agentsInfo().versions?.['claude-agent-sdk'] ?? ''}`, () => {
  agentCases({ agent: 'claude-agent-sdk', api: 'messages' });

  it('proof, leak: its own tool (createSdkMcpServer, Write disallowed) writes the file', async () => {
    const r = await runCase({
      agent: 'claude-agent-sdk',
      mode: 'leak',
      task: CORE_TASK,
      via: 'toolproof',
      target: { sdk: { mcp: true } },
    });
    expectPass(r, CORE_TASK, { api: 'messages' });
    expectPrefix(r, CORE_TASK, { api: 'messages' });
    // The program's tool was declared and called; Write was not offered.
    const names = r.upstream.flatMap((u) =>
      ((u.body as { tools?: Array<{ function?: { name?: string } }> }).tools ?? []).map(
        (t) => t.function?.name,
      ),
    );
    expect(names).toContain('mcp__files__write_file');
    expect(names).not.toContain('Write');
    const called = r.upstream.some((u) => JSON.stringify(u.body).includes('wrote 5 characters'));
    expect(called).toBe(true);
  });
});
