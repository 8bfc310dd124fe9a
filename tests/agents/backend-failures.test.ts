/**
 * A turn the backend fails, then the session goes on: the real CLIs through toolproof, the
 * scripted backend failing once on the first request with tools, either with vLLM's 500 before
 * any byte or by cutting the stream after its first chunk (a connection reset mid-answer). Each
 * agent must retry (or go on) and finish its task; nothing of the failed turn may poison the next.
 */
import { expect, it } from 'vitest';
import { describeRun, runCase } from './lib/case.js';
import { describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';
import type { AgentId } from './lib/agents.js';

const AGENTS: Array<{ agent: AgentId; api: 'messages' | 'responses' | 'chat' }> = [
  { agent: 'claude', api: 'messages' },
  { agent: 'codex', api: 'responses' },
  { agent: 'opencode', api: 'chat' },
];

describeAgents('a turn the backend fails, then the session goes on', () => {
  for (const { agent, api } of AGENTS)
    for (const kind of ['500', 'reset'] as const)
      it(`${agent}: ${kind === '500' ? "vLLM's 500 before any byte" : 'the stream cut after its first chunk'}`, async () => {
        const r = await runCase({
          agent,
          mode: 'clean',
          task: CORE_TASK,
          via: 'toolproof',
          model: { failOnce: { afterSteps: 0, kind } },
        });
        const why = describeRun(r);
        // The failed attempt reached the backend, and the agent went on past it.
        expect(r.upstream.length, why).toBeGreaterThan(1);
        expect(r.run.exitCode, why).toBe(0);
        expect(r.disk, why).toEqual([]);
        expect(r.text, why).toMatch(new RegExp(`\\b${CORE_TASK.final}\\b`, 'i'));
        // The failed turn is in toolproof's log as it happened, and later turns are answered.
        const lines = r.logs.filter((l) => l.api === api);
        expect(lines.at(-1)?.status, why).toBe(200);
      });
});
