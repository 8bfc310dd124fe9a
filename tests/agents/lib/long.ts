/**
 * The real-length cases (issue 31) of one agent: read → edit → run with the output in the answer,
 * two parallel reads then a write, eight shell calls in a row, byte-exact writes and edits, and a
 * resume where the agent has one; each in leak, prose and clean modes, through `toolproof launch`.
 *
 * The fast set (every `npm run test:agents`, as CI runs it) is each task in leak mode on one agent
 * per API (Claude Code: Messages, Codex: Responses, pi: chat completions), on Qwen Code and Grok
 * CLI, and the Continue CLI's resume (a second agent's resume through the launcher, `inFastSet`);
 * the rest runs with TOOLPROOF_AGENTS_FULL=1 and shows as skipped otherwise.
 */
import { expect, it } from 'vitest';
import type { AgentId } from './agents.js';
import { type CaseOptions, type CaseResult, describeRun, runCase } from './case.js';
import { LONG_TASKS, PARALLEL_TASK, RESUME_TASK } from './long-tasks.js';
import { MODES, type Mode } from './model.js';
import { type AgentSuite, expectPass, expectPrefix, expectSessions, tag } from './suite.js';
import type { Step, Task } from './tasks.js';

/** The whole set: every agent × task × mode. */
export const FULL = process.env.TOOLPROOF_AGENTS_FULL === '1';

/**
 * The agent that carries the fast set for each API: Claude Code (Messages), Codex (Responses) and
 * pi on chat completions (on the loaded 2-core box it ran the 8-call loop in 38 s where Qwen Code
 * took 82 s, the same run). And a second agent's resume on chat completions, the Continue CLI's
 * `--resume`: a resume is where the launcher's per-run configuration (a new temporary folder each
 * launch) meets the agent's own session store, each agent's its own, and only pi's ran in CI (the
 * cheapest of the others: 51 s of test time under load, Qwen Code's 115 s, opencode's 170 s).
 */
export function inFastSet(agent: AgentId, mode: Mode, piApi?: string, task?: string): boolean {
  if (mode !== 'leak') return false;
  if (agent === 'pi') return piApi === 'openai-completions';
  if (agent === 'cn') return task === RESUME_TASK.id;
  return FAST_AGENTS.has(agent);
}

/**
 * Every real-length task in leak mode. Qwen Code and Grok CLI joined Claude Code and Codex
 * (December 2026): each ran them all through the launcher in the full set (Qwen Code's five in
 * 192 s of test time, its resume included; Grok CLI's four, its only non-streaming loop, in 80 s;
 * 142 s of wall time for both files on the loaded 2-core box), and each is a loop of its own that
 * only the full set ran: Qwen Code's relaunched process, Grok CLI's `stream: false`.
 */
const FAST_AGENTS = new Set<AgentId>(['claude', 'codex', 'qwen', 'grok']);

/**
 * Each agent's own resume: the first run keeps its session, the second picks it up. Cline 3.0.65
 * and Grok CLI 0.0.34 have none headless (docs/agents-setup.md): Cline's `--id <session-id>` forces
 * its terminal UI (no TTY: "interactive mode requires a TTY"), Grok CLI keeps no session at all.
 */
export const RESUME: Partial<
  Record<AgentId, { first: (p: string) => string[]; again: (p: string) => string[] }>
> = {
  claude: {
    first: (p) => ['-p', p, '--permission-mode', 'acceptEdits', '--allowedTools', 'Write,Read,Edit,Bash'],
    again: (p) => [
      '-p',
      p,
      '--continue',
      '--permission-mode',
      'acceptEdits',
      '--allowedTools',
      'Write,Read,Edit,Bash',
    ],
  },
  codex: {
    first: (p) => [
      'exec',
      '--skip-git-repo-check',
      '--color',
      'never',
      '--dangerously-bypass-approvals-and-sandbox',
      p,
    ],
    again: (p) => [
      'exec',
      'resume',
      '--last',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      p,
    ],
  },
  qwen: { first: (p) => ['--yolo', p], again: (p) => ['--yolo', '--continue', p] },
  pi: { first: (p) => ['-p', '--offline', p], again: (p) => ['-p', '--offline', '--continue', p] },
  opencode: { first: (p) => ['run', '--pure', p], again: (p) => ['run', '--pure', '--continue', p] },
  kilo: { first: (p) => ['run', p], again: (p) => ['run', '--continue', p] },
  cn: { first: (p) => ['-p', '--auto', p], again: (p) => ['-p', '--auto', '--resume', p] },
};

/** Two or more calls in one assistant turn of the history the backend received. */
export function parallelTurns(r: CaseResult): number {
  let n = 0;
  for (const u of r.upstream) {
    const messages =
      (u.body as { messages?: Array<{ role?: string; tool_calls?: unknown[] }> }).messages ?? [];
    if (messages.some((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) >= 2)) n++;
  }
  return n;
}

/** Whether the agent's requests allowed several calls in one turn. */
export function allowsParallel(r: CaseResult): boolean {
  return r.sent.some((s) => {
    const body = s.body as {
      parallel_tool_calls?: unknown;
      tool_choice?: { disable_parallel_tool_use?: unknown };
    };
    return body.parallel_tool_calls !== false && body.tool_choice?.disable_parallel_tool_use !== true;
  });
}

function expectLong(r: CaseResult, task: Task, suite: AgentSuite): void {
  expectPass(r, task, { api: suite.api, ...(suite.noStream ? { stream: false } : {}) });
  // A resumed session may rebuild its opening message (Qwen Code lists the working directory
  // there, now with log.txt): each run's loop is checked as its own conversation.
  const perRun = task.resume ? { ...task, steps: task.steps.slice(task.resume.after) } : task;
  expectPrefix(r, perRun, { api: suite.api });
  expectSessions(r, suite);
  const why = describeRun(r);
  if (task.id === PARALLEL_TASK.id && allowsParallel(r)) expect(parallelTurns(r), why).toBeGreaterThan(0);
  if (task.resume) {
    // The first run stopped where the task said, and the second went on from its history.
    expect(r.first?.exitCode, why).toBe(0);
    expect(finalOf(r.first?.stdout ?? ''), why).toMatch(new RegExp(`\\b${task.resume.say}\\b`));
  }
  suite.check?.(r);
}

function finalOf(stdout: string): string {
  return stdout.trim();
}

export interface LongOptions {
  /** Leave out tasks the agent cannot do (by id). */
  skip?: string[];
  /** Codex: edits are apply_patch (it has no edit tool; through its shell tool it intercepts apply_patch). */
  editAs?: 'patch';
}

/** The task with its edits as apply_patch steps. */
function asPatches(task: Task): Task {
  const steps = task.steps.map((s): Step => (s.op === 'edit' ? { ...s, op: 'patch' } : s));
  return { ...task, steps };
}

/** The real-length cases of one agent suite (see the file's comment for the fast and full sets). */
export function longCases(suite: AgentSuite, options: LongOptions = {}): void {
  const base: Partial<CaseOptions> & { agent: AgentId } = {
    agent: suite.agent,
    ...(suite.piApi ? { piApi: suite.piApi } : {}),
    ...suite.extra,
  };
  const resume = RESUME[suite.agent];
  const tasks = [...LONG_TASKS, ...(resume ? [RESUME_TASK] : [])]
    .filter((t) => !options.skip?.includes(t.id))
    .map((t) => (options.editAs === 'patch' ? asPatches(t) : t));
  for (const task of tasks) {
    for (const mode of MODES) {
      const fast = inFastSet(suite.agent, mode, suite.piApi, task.id);
      const name = `${task.id}, ${mode}: through toolproof it does the task${fast ? '' : ' (full set)'}`;
      it.skipIf(!fast && !FULL)(
        name,
        async ({ task: t }) => {
          tag(t.meta, suite, task, mode, 'toolproof');
          const r = await runCase({
            ...base,
            mode,
            task,
            via: 'toolproof',
            ...(task.resume && resume ? { args: resume.first, resumeArgs: resume.again } : {}),
            // Kilo and opencode take 15 to 20 s a turn on a loaded box: eight turns pass 150 s.
            timeoutMs: 300_000,
          });
          expectLong(r, task, suite);
          // A resume is two runs of the agent.
        },
        (task.resume ? 2 : 1) * 330_000,
      );
    }
  }
}
