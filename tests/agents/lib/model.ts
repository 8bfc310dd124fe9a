/**
 * The scripted small model behind the agents: a simulator scenario (simulator/types.ts) that
 * follows a task step by step against whatever tools the agent declared, in one of three habits:
 *
 * - leak:  under tool_choice auto it writes its call as `<tool_call>{json}</tool_call>` text in
 *          content (a backend whose tool parser does not match the model);
 * - prose: under auto it answers in prose, claiming it did the work; under "required" or a named
 *          tool (guided decoding, as vLLM does) it has to call, and calls the step's tool;
 * - clean: proper tool_calls.
 *
 * Progress is read from the request: one step per tool result already in the history. Once every
 * step's result came back it answers the task's final text. A request without tools (a title or
 * summary side request) gets a short plain answer.
 */
import type { ScenarioFn, TurnAction } from '../../../simulator/index.js';
import type { Task } from './tasks.js';
import { callForStep } from './tools.js';

export type Mode = 'leak' | 'prose' | 'clean';
export const MODES: readonly Mode[] = ['leak', 'prose', 'clean'];

/** What the prose habit claims for each step (nothing of it happened). */
function claim(task: Task, index: number): string {
  const step = task.steps[index];
  if (!step) return task.final;
  switch (step.op) {
    case 'write':
      return `I have created ${step.path} with the content you asked for. done`;
    case 'read':
      return `I read ${step.path}; it looks fine.`;
    case 'edit':
    case 'patch':
      return `I have updated ${step.path} as requested.`;
    case 'run':
      return `I ran \`${step.command}\` and it succeeded.`;
  }
}

export interface ModelOptions {
  mode: Mode;
  task: Task;
  /** The agent's working directory: tools that want absolute paths get them under it. */
  cwd: string;
}

export function agentModel(options: ModelOptions): ScenarioFn {
  const { mode, task, cwd } = options;
  return (ctx) => {
    if (ctx.tools.length === 0) return { say: 'Create proof file' };
    const done = ctx.messages.filter((m) => m?.role === 'tool').length;
    if (done >= task.steps.length) return { say: task.final };
    const step = task.steps[done]!;
    const call = callForStep(step, ctx.tools, cwd);
    if (!call) return { say: `I cannot do that with these tools (${step.op}).` };
    const prose: TurnAction = { say: claim(task, done), whenRequired: { call: [call] } };
    switch (mode) {
      case 'clean':
        return { call: [call] };
      case 'leak':
        return { leak: { format: 'hermes', calls: [call] } };
      case 'prose':
        return prose;
    }
  };
}
