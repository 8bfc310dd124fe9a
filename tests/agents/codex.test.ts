/**
 * Codex (Responses only) in its default configuration (namespace tools, hosted web_search on), and
 * with its catalog's freeform apply_patch. Codex 0.171's catalog has no function form of
 * apply_patch (`function` is an unknown variant); without the freeform tool it runs apply_patch
 * through its shell tool (exec_command), which is the function-call path.
 */
import { expect } from 'vitest';
import type { ToolDef } from '../../protocol/openai.js';
import { it } from 'vitest';
import { CODEX_FREEFORM } from './lib/agents.js';
import { describeRun, runCase } from './lib/case.js';
import { longCases } from './lib/long.js';
import { agentCases, describeAgents, expectSessions } from './lib/suite.js';
import { CORE_TASK, PATCH_TASK } from './lib/tasks.js';

describeAgents('Codex 0.171.0', () => {
  agentCases({
    agent: 'codex',
    api: 'responses',
    tasks: [CORE_TASK, { ...PATCH_TASK, id: 'patch-function' }],
  });
  longCases({ agent: 'codex', api: 'responses' }, { editAs: 'patch' });
  agentCases({
    agent: 'codex',
    api: 'responses',
    tasks: [{ ...PATCH_TASK, id: 'patch-freeform' }],
    extra: { target: CODEX_FREEFORM },
    check: (r) => {
      // The backend saw apply_patch as a function of one string; Codex got it back as its custom call.
      const tools = r.upstream.flatMap((u) => ((u.body as { tools?: ToolDef[] }).tools ?? []) as ToolDef[]);
      const patch = tools.find((t) => t.function?.name === 'apply_patch');
      expect(patch?.type).toBe('function');
      const schema = patch?.function.parameters as
        | { properties?: Record<string, { type?: string }> }
        | undefined;
      const props = Object.values(schema?.properties ?? {});
      expect(props.map((p) => p.type)).toEqual(['string']);
      // ...and sent it back in its history as a custom_tool_call with its output.
      const items = r.sent.flatMap(
        (s) => ((s.body as { input?: unknown[] }).input ?? []) as Array<{ type?: string; name?: string }>,
      );
      expect(items).toContainEqual(
        expect.objectContaining({ type: 'custom_tool_call', name: 'apply_patch' }),
      );
      expect(items).toContainEqual(expect.objectContaining({ type: 'custom_tool_call_output' }));
    },
  });
});

describeAgents('Codex 0.171.0: auto-compaction through toolproof', () => {
  // Codex compacts once its session passes model_auto_compact_token_limit: a summary request with
  // tool_choice and no tools. Forwarded as it was, vLLM refused it ("When using `tool_choice`,
  // `tools` must be set."), Codex exited and the session was over (policies/tool-fields).
  it('proof: with model_auto_compact_token_limit below the session size it compacts and finishes', async () => {
    const r = await runCase({
      agent: 'codex',
      mode: 'clean',
      task: CORE_TASK,
      via: 'toolproof',
      target: { codexConfig: ['model_auto_compact_token_limit = 1000'] },
    });
    const why = describeRun(r);
    expect(r.run.exitCode, why).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.text, why).toMatch(/\bdone\b/i);
    for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
    // The compaction turn: the agent sent a tool_choice without tools; upstream got neither.
    const compactions = r.sent.filter((s) => {
      const body = s.body as { tools?: unknown[]; tool_choice?: unknown };
      return (body.tools ?? []).length === 0 && body.tool_choice !== undefined;
    });
    expect(compactions.length, why).toBeGreaterThan(0);
    const toolless = r.upstream.filter((u) => !(u.body as { tools?: unknown[] }).tools?.length);
    expect(toolless.length, why).toBeGreaterThanOrEqual(compactions.length);
    for (const u of toolless) expect(Object.keys(u.body as object), why).not.toContain('tool_choice');
    // The compaction turn is the session's too: the inspector shows one session.
    expectSessions(r, { agent: 'codex' });
  });
});
