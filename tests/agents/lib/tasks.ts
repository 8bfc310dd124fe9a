/**
 * The tasks the scripted model drives: what the user asks, the files the working directory
 * starts with, the steps the model takes one turn each (mapped onto whatever tools the agent
 * declares, see tools.ts) and what must be on disk at the end.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Step =
  | { op: 'write'; path: string; content: string }
  | { op: 'read'; path: string }
  | { op: 'edit'; path: string; old: string; new: string }
  | { op: 'run'; command: string }
  /** Codex: an apply_patch that updates `path` (whatever form, function or freeform, it declares). */
  | { op: 'patch'; path: string; old: string; new: string }
  /** Several calls in one turn (parallel tool calls), one result each. */
  | { op: 'parallel'; steps: Step[] }
  /** Claude Code: a sub-agent (its Agent / Task tool) that does `task` in a conversation of its own. */
  | { op: 'delegate'; description: string; task: Task }
  /** A call of one named tool with these arguments (`paths`: the keys made absolute under the working directory). */
  | { op: 'call'; name: string; arguments: Record<string, unknown>; paths?: string[] };

export interface Task {
  id: string;
  prompt: string;
  files: Record<string, string | Buffer>;
  steps: Step[];
  /** The final answer the model gives once every step's result came back. */
  final: string;
  /**
   * When set, the model's final answer is this pattern's first group as found in the request it
   * receives (else a sentence without it): the answer proves that content reached the upstream.
   */
  finalFrom?: RegExp;
  /** Files that must exist at the end, with their exact content. */
  expect: Record<string, string>;
  /** Compare the files on disk byte for byte (else trimmed text). */
  exact?: boolean;
  /** Files that must exist and hold this text somewhere (a format the agent writes its own way). */
  contains?: Record<string, string>;
  /**
   * Two runs of the agent: the first stops once `after` calls' results came back (answering
   * `say`); the second (the agent resumed with `prompt`) goes on from the history it restored.
   */
  resume?: { after: number; say: string; prompt: string };
}

/** How many calls (and so tool results) a step takes. */
export function stepCalls(step: Step): number {
  return step.op === 'parallel' ? step.steps.length : 1;
}

/** Calls in all of a task's steps. */
export function taskCalls(task: Task): number {
  return task.steps.reduce((n, s) => n + stepCalls(s), 0);
}

export const CORE_TASK: Task = {
  id: 'proof',
  prompt: 'Create a file named proof.txt containing 7391, then say done.',
  files: {},
  steps: [{ op: 'write', path: 'proof.txt', content: '7391\n' }],
  final: 'done',
  expect: { 'proof.txt': '7391\n' },
};

/** Several turns: read a file, edit it, run a command on it, then answer. */
export const EDIT_TASK: Task = {
  id: 'edit',
  prompt:
    'Read notes.txt, change its status from draft to final, copy it to notes.bak with cp, then say done.',
  files: { 'notes.txt': 'title: agents\nstatus: draft\n' },
  steps: [
    { op: 'read', path: 'notes.txt' },
    { op: 'edit', path: 'notes.txt', old: 'status: draft', new: 'status: final' },
    { op: 'run', command: 'cp notes.txt notes.bak' },
  ],
  final: 'done',
  expect: { 'notes.txt': 'title: agents\nstatus: final\n', 'notes.bak': 'title: agents\nstatus: final\n' },
};

/** Codex's way of editing: apply_patch (as a function or a freeform tool), then a command. */
export const PATCH_TASK: Task = {
  id: 'patch',
  prompt:
    'In notes.txt change the status from draft to final with apply_patch, show the file with cat, then say done.',
  files: { 'notes.txt': 'title: agents\nstatus: draft\n' },
  steps: [
    { op: 'patch', path: 'notes.txt', old: 'status: draft', new: 'status: final' },
    { op: 'run', command: 'cat notes.txt' },
  ],
  final: 'done',
  expect: { 'notes.txt': 'title: agents\nstatus: final\n' },
};

export function taskPrompt(task: Task): string {
  return task.prompt;
}

/** The files that differ from what the task expects: [] when the effect on disk is right. */
export function diskProblems(task: Task, cwd: string): string[] {
  const problems: string[] = [];
  for (const [name, want] of Object.entries(task.expect)) {
    const path = join(cwd, name);
    if (!existsSync(path)) problems.push(`${name}: missing`);
    else if (task.exact) {
      const got = readFileSync(path);
      if (!got.equals(Buffer.from(want, 'utf8')))
        problems.push(
          `${name}: bytes ${got.toString('hex')}, want ${Buffer.from(want, 'utf8').toString('hex')}`,
        );
    } else {
      const got = readFileSync(path, 'utf8');
      if (got.trim() !== want.trim()) problems.push(`${name}: ${JSON.stringify(got.slice(0, 200))}`);
    }
  }
  for (const [name, want] of Object.entries(task.contains ?? {})) {
    const path = join(cwd, name);
    if (!existsSync(path)) problems.push(`${name}: missing`);
    else if (!readFileSync(path, 'utf8').includes(want))
      problems.push(
        `${name}: no ${JSON.stringify(want)} in ${JSON.stringify(readFileSync(path, 'utf8').slice(0, 300))}`,
      );
  }
  return problems;
}
