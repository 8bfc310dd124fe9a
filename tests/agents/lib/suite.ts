/**
 * The assertions every agent case makes, and the per-agent suites built from them.
 */
import { describe, expect, it } from 'vitest';
import type { AgentId, PiApi } from './agents.js';
import { agentsInfo, type CaseOptions, type CaseResult, describeRun, MARKUP, runCase } from './case.js';
import { MODES, type Mode } from './model.js';
import { UPSTREAM_MODEL } from './stack.js';
import { CORE_TASK, EDIT_TASK, type Task } from './tasks.js';

export type Api = 'chat' | 'responses' | 'messages';

/** Skips loudly when the CLIs are absent (never in CI: setup.ts fails there instead). */
export function describeAgents(name: string, body: () => void): void {
  const info = agentsInfo();
  if (info.missing) {
    describe.skip(`${name} (SKIPPED: ${info.missing})`, body);
    return;
  }
  describe.concurrent(name, body);
}

export interface Expect {
  api: Api;
  /** The model name the agent sends (toolproof's log names it). */
  model?: string;
}

/** Through toolproof: the task is done, exit 0, a clean final text, and toolproof's log says so. */
export function expectPass(r: CaseResult, task: Task, e: Expect): void {
  const why = describeRun(r);
  expect(r.run.exitCode, why).toBe(0);
  expect(r.disk, why).toEqual([]);
  expect(r.text, why).toMatch(new RegExp(`\\b${task.final}\\b`, 'i'));
  expect(r.text, why).not.toMatch(MARKUP);
  const lines = r.logs.filter((l) => l.api === e.api);
  expect(lines.length, why).toBeGreaterThan(0);
  for (const line of r.logs) expect(line.status, `${why}\n${JSON.stringify(line)}`).toBe(200);
  for (const line of lines) {
    expect(line.model, why).toBe(e.model ?? UPSTREAM_MODEL);
    expect(line.stream, why).toBe(true);
    expect(line.harness, why).toBeDefined();
  }
  // One forced request per step, and one more for the answer: toolproof drove every turn.
  const forced = lines.filter((l) => l.harness?.forced === true);
  expect(forced.length, why).toBeGreaterThanOrEqual(task.steps.length + 1);
}

/** Straight to the backend: a leak or a prose claim reaches the user, and nothing is on disk. */
export function expectDirectFailure(r: CaseResult, mode: Mode): void {
  const why = describeRun(r);
  expect(r.disk, why).not.toEqual([]);
  if (mode === 'leak') expect(r.text, why).toContain('<tool_call>');
  if (mode === 'prose') expect(r.text, why).toMatch(/I have created proof\.txt/);
}

export interface AgentSuite {
  agent: AgentId;
  api: Api;
  piApi?: PiApi;
  /** Speaks chat completions: the same runs straight to the backend are checked too. */
  direct?: boolean;
  tasks?: Task[];
  extra?: Partial<CaseOptions>;
  /** More to assert on every run through toolproof. */
  check?: (r: CaseResult) => void;
}

/** Every mode, every task, through toolproof; and the harness effect where the agent can go direct. */
export function agentCases(suite: AgentSuite): void {
  const base = { agent: suite.agent, ...(suite.piApi ? { piApi: suite.piApi } : {}), ...suite.extra };
  for (const task of suite.tasks ?? [CORE_TASK, EDIT_TASK]) {
    for (const mode of MODES) {
      it(`${task.id}, ${mode}: through toolproof it does the task`, async () => {
        const r = await runCase({ ...base, mode, task, via: 'toolproof' });
        expectPass(r, task, { api: suite.api });
        suite.check?.(r);
      });
    }
  }
  const tasks = suite.tasks ?? [CORE_TASK, EDIT_TASK];
  // Forcing off: the leaked calls reach the client only through leak recovery.
  if (tasks.includes(CORE_TASK))
    it('proof, leak, forceToolUse off: leak recovery alone does the task', async () => {
      const r = await runCase({
        ...base,
        mode: 'leak',
        task: CORE_TASK,
        via: 'toolproof',
        file: () => ({ defaults: { forceToolUse: false } }),
      });
      const why = describeRun(r);
      expect(r.run.exitCode, why).toBe(0);
      expect(r.disk, why).toEqual([]);
      expect(r.text, why).not.toMatch(MARKUP);
      const lines = r.logs.filter((l) => l.api === suite.api && l.harness);
      expect(
        lines.every((l) => l.harness?.forced === false),
        why,
      ).toBe(true);
      const leaks = lines.flatMap(
        (l) => (l.harness?.leaks ?? []) as Array<{ format: string; outcome: string }>,
      );
      expect(leaks, why).toContainEqual(expect.objectContaining({ outcome: 'recovered' }));
    });
  if (!suite.direct) return;
  for (const mode of MODES) {
    it(`proof, ${mode}: straight to the backend ${mode === 'clean' ? 'it works too' : 'it fails'}`, async () => {
      const r = await runCase({ ...base, mode, task: CORE_TASK, via: 'direct' });
      if (mode === 'clean') {
        expect(r.run.exitCode, describeRun(r)).toBe(0);
        expect(r.disk, describeRun(r)).toEqual([]);
      } else {
        expectDirectFailure(r, mode);
      }
    });
  }
}
