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
 * Progress is read from the request: one call per tool result already in the history, plus the
 * calls a compaction summary in the history says were done. A parallel step is several calls in
 * one turn (one `<tool_call>` block each when leaked); a sub-agent's conversation follows its own
 * task; a resumed task stops after its first part until the resume prompt is in the history. Once every step's result came back it
 * answers the task's final text (through the agent's completion tool when it declares one). A request without tools (a title, or the agent's compaction turn)
 * gets a short plain answer; once steps were done it is a summary that says how many
 * (`[steps done: N]`), as a real model's summary carries the session's progress.
 */
import type { ScenarioFn, ScriptedCall, TurnAction } from '../../../simulator/index.js';
import { type Step, stepCalls, type Task, taskCalls } from './tasks.js';
import { callForStep, completionCall } from './tools.js';

export type Mode = 'leak' | 'prose' | 'clean';
export const MODES: readonly Mode[] = ['leak', 'prose', 'clean'];

/** What the prose habit claims for a step (nothing of it happened). */
function claim(step: Step | undefined, final: string): string {
  if (!step) return final;
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
    case 'parallel':
      return step.steps.map((s) => claim(s, final)).join(' ');
    case 'delegate':
      return `A sub-agent did it: ${step.description}.`;
    case 'call':
      return `I used ${step.name}.`;
  }
}

/**
 * Where a task stands after `done` calls came back: the step to take next (undefined once every
 * step is done) and, inside a parallel step, how many of its calls are already done (a client that
 * ran fewer than asked at once gets the rest next turn).
 */
export function position(task: Task, done: number): { step?: Step; offset: number } {
  let left = done;
  for (const step of task.steps) {
    const n = stepCalls(step);
    if (left < n) return { step, offset: left };
    left -= n;
  }
  return { offset: 0 };
}

/** The user messages' text, joined (what the user asked in this conversation). */
function userTexts(messages: ReadonlyArray<{ role?: string; content?: unknown } | undefined>): string[] {
  return messages
    .filter((m) => m?.role === 'user')
    .map((m) => (typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '')));
}

/** The sub-agent task whose prompt opens this conversation, if it is a sub-agent's. */
function subTask(
  task: Task,
  messages: ReadonlyArray<{ role?: string; content?: unknown } | undefined>,
): Task | undefined {
  const first = userTexts(messages)[0] ?? '';
  for (const step of task.steps)
    if (step.op === 'delegate' && first.includes(step.task.prompt)) return step.task;
  return undefined;
}

export interface ModelOptions {
  mode: Mode;
  task: Task;
  /** The agent's working directory: tools that want absolute paths get them under it. */
  cwd: string;
  /**
   * A small window: once this many tool results are in an uncompacted history, a request with
   * tools is answered with vLLM's context-overflow 400 (the agent must compact to go on).
   */
  overflowAfterSteps?: number;
  /**
   * A window in tokens (promptTokens): a request with tools whose messages and tool declarations
   * are longer is answered with vLLM's context-overflow 400, as a 32k-window server does.
   */
  windowTokens?: number;
  /**
   * The backend fails once, on the first request after this many tool results: `reset` cuts the
   * stream after its first chunks (a connection reset mid-answer), `500` answers vLLM's 500
   * before any byte. The agent's retry (or next turn) then gets the scripted answer.
   */
  failOnce?: { afterSteps: number; kind: 'reset' | '500' };
}

/** vLLM's context-overflow 400 (tests/fixtures/agents/context-overflow-bodies.json, vllm_input). */
const OVERFLOW =
  "This model's maximum context length is 32768 tokens. However, your request has 40001 input tokens. Please reduce the length of the input messages.";

/**
 * A prompt's tokens as a byte-level tokenizer gives them, about: printable ASCII 4 characters a
 * token, any other character (a NUL, CJK, an emoji's half) a token each. Counted over the messages
 * and the tool declarations as JSON, a control character JSON writes as `\u00XX` counting one.
 */
export function promptTokens(messages: unknown, tools: unknown): number {
  const json = JSON.stringify([messages, tools]);
  let ascii = 0;
  let other = 0;
  let escapes = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x5c && json.startsWith('u00', i + 1)) {
      escapes++;
      i += 5;
    } else if (c >= 0x20 && c < 0x7f) ascii++;
    else other++;
  }
  return Math.ceil(ascii / 4) + other + escapes;
}

/** A request that asks for a summary of the conversation (an agent's compaction turn). */
const SUMMARY_ASK = /summary of (?:the|our) conversation|summarize the conversation|detailed summary/i;

/**
 * What the user said since the model last spoke: every user message after the last assistant one,
 * joined. Claude Code 2.1.332 sends a `system` message after its compaction ask (toolproof sends
 * it up as a user message), so the ask is not always the last user message.
 */
function turnUserText(messages: ReadonlyArray<{ role?: string; content?: unknown } | undefined>): string {
  const texts: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant') break;
    if (m?.role === 'user')
      texts.unshift(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
  }
  return texts.join('\n');
}

/**
 * What the last tool result said, quoted (at most 600 characters), for an answer that found no
 * number in it: the agent prints it, so a failed case shows what its tool gave back (an empty
 * shell output, an error) without a rerun.
 */
function lastResult(messages: ReadonlyArray<{ role?: string; content?: unknown } | undefined>): string {
  const last = messages.findLast((m) => m?.role === 'tool');
  if (!last) return 'No tool result came back.';
  const parts: unknown[] = Array.isArray(last.content) ? last.content : [last.content];
  const text = parts
    .map((p) => {
      if (typeof p === 'string') return p;
      const t = (p as { text?: unknown } | null)?.text;
      return typeof t === 'string' ? t : JSON.stringify(p ?? '');
    })
    .join('');
  return `The last tool result was: ${JSON.stringify(text.slice(0, 600))}`;
}

/** A tool result in a conversation written out as text (opencode's summary request). */
const RENDERED_RESULT = /^\[Tool result\]:/gm;

const PROGRESS = /\[steps done: (\d+)\]/g;

/**
 * The steps a conversation written out as text says were done: its "[Tool result]:" lines, and
 * those of the summary it carries when it has one (a second compaction: Cline 3.0.65 writes
 * "Previous summary:" before the turns since, Kilo 7.7.7 its <prior-summary> after them; the
 * summary's steps and the turns' add up).
 */
function renderedSteps(text: string): number {
  let prior = 0;
  for (const hit of text.matchAll(PROGRESS)) prior = Math.max(prior, Number(hit[1]));
  return prior + (text.match(RENDERED_RESULT)?.length ?? 0);
}

/** The steps the latest compaction summary in the history says were done (0 without one). */
function summarizedSteps(messages: ReadonlyArray<{ role?: string; content?: unknown } | undefined>): number {
  let n = 0;
  for (const m of messages) {
    if (m?.role === 'tool') continue;
    const text = typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '');
    for (const hit of text.matchAll(PROGRESS)) n = Math.max(n, Number(hit[1]));
  }
  return n;
}

export function agentModel(options: ModelOptions): ScenarioFn {
  const scripted = scriptedModel(options);
  const fail = options.failOnce;
  if (!fail) return scripted;
  let failed = false;
  return (ctx) => {
    const action = scripted(ctx);
    const results = ctx.messages.filter((m) => m?.role === 'tool').length;
    if (failed || ctx.tools.length === 0 || results < fail.afterSteps) return action;
    failed = true;
    if (fail.kind === '500')
      return {
        error: {
          status: 500,
          message: 'EngineCore encountered an issue. See stack trace (above) for the root cause.',
          type: 'InternalServerError',
        },
      };
    return { ...action, dieAfterChunks: 1 };
  };
}

function scriptedModel(options: ModelOptions): ScenarioFn {
  const { mode, cwd } = options;
  return (ctx) => {
    // A sub-agent's conversation (Claude Code's Agent tool) follows its own task.
    const task = subTask(options.task, ctx.messages) ?? options.task;
    const results = ctx.messages.filter((m) => m?.role === 'tool').length;
    const summarized = summarizedSteps(ctx.messages);
    const done = results + summarized;
    const asked = turnUserText(ctx.messages);
    if (ctx.tools.length === 0 || SUMMARY_ASK.test(asked)) {
      // opencode asks for its summary in a conversation of its own, the session written out as
      // text inside it: one "[Tool result]:" per call that came back.
      const summed = Math.max(done, renderedSteps(asked));
      // A fact the answer needs (finalFrom) is kept in the summary, as a real model's would keep it.
      const fact = task.finalFrom
        ? new RegExp(task.finalFrom.source).exec(JSON.stringify(ctx.messages))
        : null;
      const kept = fact ? ` ${fact[0]}.` : '';
      const say =
        summed > 0 || SUMMARY_ASK.test(asked)
          ? `Summary of the work so far.${kept} [steps done: ${summed}]`
          : 'Create proof file';
      // Forced to call a tool (tool_choice "required") on a summary ask that declares the
      // session's tools, a small model calls the task's next tool, not final_answer (toolproof
      // sends every compaction `auto`: the Continue CLI's, Claude Code's with its reminder after).
      const next = position(task, done).step;
      const forced = next && next.op !== 'parallel' ? callForStep(next, ctx.tools, cwd) : undefined;
      return forced ? { say, whenRequired: { call: [forced] } } : { say };
    }
    if (options.overflowAfterSteps !== undefined && summarized === 0 && results >= options.overflowAfterSteps)
      return { error: { status: 400, message: OVERFLOW, type: 'BadRequestError' } };
    if (options.windowTokens !== undefined && promptTokens(ctx.messages, ctx.tools) > options.windowTokens)
      return { error: { status: 400, message: OVERFLOW, type: 'BadRequestError' } };
    const answer = (text: string): TurnAction => {
      // An agent whose run ends only through its completion tool (Cline) gets the answer there,
      // in the mode's habit, as a model following its system prompt does.
      const submit = completionCall(ctx.tools, text);
      if (!submit) return { say: text };
      if (mode === 'clean') return { call: [submit] };
      if (mode === 'leak') return { leak: { format: 'hermes', calls: [submit] } };
      return { say: text, whenRequired: { call: [submit] } };
    };
    // The first run of a resumed task stops halfway; the resumed one (its prompt in the history) goes on.
    const resume = task.resume;
    if (resume && done === resume.after && !userTexts(ctx.messages).some((t) => t.includes(resume.prompt)))
      return answer(resume.say);
    if (done >= taskCalls(task)) {
      const found = task.finalFrom?.exec(JSON.stringify(ctx.messages));
      // A command's output that never came back is run once more, as a model that sees an empty
      // result does: Qwen Code 0.24.4's shell settles on the child's `exit` event, before its
      // stdout pipe is drained, so on a loaded box a command's output is sometimes "(empty)"
      // (its childProcessFallback; CI on 05150b3 failed read-edit-run on it, the disk edited).
      // Only a result in the history is looked at again: once a compaction summary says every
      // step was done, the model answers from it (Kilo 7.7.7 in 16k re-ran its 1 MB command
      // after each compaction and gave up: "Compaction exhausted ... after 3 attempts").
      const last = task.steps.at(-1);
      if (!found && task.finalFrom && last?.op === 'run' && done === taskCalls(task) && results > 0) {
        const again = callForStep(last, ctx.tools, cwd);
        if (again) {
          if (mode === 'clean') return { call: [again] };
          if (mode === 'leak') return { leak: { format: 'hermes', calls: [again] } };
          return { say: claim(last, task.final), whenRequired: { call: [again] } };
        }
      }
      const text = !task.finalFrom
        ? task.final
        : found
          ? found[1]!
          : `The number is not in what I was given. ${lastResult(ctx.messages)}`;
      return answer(text);
    }
    const { step, offset } = position(task, done);
    const steps = step!.op === 'parallel' ? step!.steps.slice(offset) : [step!];
    const calls = steps.map((s) => callForStep(s, ctx.tools, cwd));
    if (calls.some((c) => !c))
      return { say: `I cannot do that with these tools (${steps.map((s) => s.op).join(', ')}).` };
    const scripted = calls as ScriptedCall[];
    switch (mode) {
      case 'clean':
        return { call: scripted };
      case 'leak':
        return { leak: { format: 'hermes', calls: scripted } };
      case 'prose':
        return { say: claim(step, task.final), whenRequired: { call: scripted } };
    }
  };
}
