/** Claude Code (Messages), with the upstream's model name and with its own model names mapped in the YAML. */
import { expect, it } from 'vitest';
import { describeRun, runCase } from './lib/case.js';
import { longCases } from './lib/long.js';
import { CLAUDE_NAMES, claudeNamesConfig, UPSTREAM_MODEL } from './lib/stack.js';
import { agentCases, describeAgents, expectPass, expectPrefix } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

const NAMES = CLAUDE_NAMES;

describeAgents('Claude Code 2.1.332', () => {
  agentCases({ agent: 'claude', api: 'messages' });
  longCases({ agent: 'claude', api: 'messages' });

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

describeAgents('Claude Code 2.1.332: compaction after the overflow error', () => {
  // A window too small for the session: after the first tool result the backend answers vLLM's
  // context-overflow 400, toolproof maps it to "prompt is too long" and Claude Code compacts, then
  // finishes from its summary. Every request it sends after that is answered.
  it('proof: the overflow becomes "prompt is too long", Claude Code compacts and finishes', async () => {
    const r = await runCase({
      agent: 'claude',
      mode: 'clean',
      task: CORE_TASK,
      via: 'toolproof',
      model: { overflowAfterSteps: 1 },
    });
    const why = describeRun(r);
    expect(r.run.exitCode, why).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.text, why).toMatch(/\bdone\b/i);
    const statuses = r.logs.map((l) => l.status);
    expect(statuses, why).toContain(400); // the overflow, once
    const overflow = statuses.indexOf(400);
    // After it: the compaction turn and the rest of the session, all answered.
    expect(statuses.slice(overflow + 1).length, why).toBeGreaterThan(0);
    for (const s of statuses.slice(overflow + 1)) expect(s, why).toBe(200);
    const summaries = r.upstream.filter((u) => JSON.stringify(u.body).includes('[steps done: 1]'));
    expect(summaries.length, why).toBeGreaterThan(0);
  });
});
