/** Claude Code (Messages), with the upstream's model name and with its own model names mapped in the YAML. */
import { expect, it } from 'vitest';
import { runCase } from './lib/case.js';
import { CLAUDE_NAMES, claudeNamesConfig, UPSTREAM_MODEL } from './lib/stack.js';
import { agentCases, describeAgents, expectPass, expectPrefix } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

const NAMES = CLAUDE_NAMES;

describeAgents('Claude Code 2.1.332', () => {
  agentCases({ agent: 'claude', api: 'messages' });

  it('proof, prose: its own model names (claude-sonnet-4-5, claude-haiku-4-5) mapped in the YAML config', async () => {
    const r = await runCase({
      agent: 'claude',
      mode: 'prose',
      task: CORE_TASK,
      via: 'toolproof',
      claudeModels: NAMES,
      file: claudeNamesConfig,
    });
    expectPass(r, CORE_TASK, { api: 'messages', model: NAMES.main });
    expectPrefix(r, CORE_TASK, { api: 'messages' });
    // The backend only ever saw the name it serves (it answers 404 for any other).
    const models = new Set(r.upstream.map((u) => (u.body as { model?: string } | undefined)?.model));
    expect([...models]).toEqual([UPSTREAM_MODEL]);
  });
});
