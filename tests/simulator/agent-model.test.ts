/**
 * The agent suite's scripted model (tests/agents/lib/model.ts, tools.ts) against the tool lists the
 * pinned agents really declare (tests/fixtures/agents/, recorded by tests/agents/capture.ts): every
 * step maps onto a declared tool with its required arguments, and each habit answers as it says.
 * The agent suite itself (the real CLIs) is `npm run test:agents`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChatMessage, JsonObject, ToolDef } from '../../protocol/openai.js';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { generate } from '../../simulator/generate.js';
import { turnContext } from '../../simulator/scenarios.js';
import {
  DEFERRED_TASK,
  FIDELITY_TASK,
  PARALLEL_TASK,
  RESUME_TASK,
  RUN_TASK,
  SUBAGENT_TASK,
} from '../agents/lib/long-tasks.js';
import { agentModel, position } from '../agents/lib/model.js';
import { CORE_TASK, EDIT_TASK, PATCH_TASK, type Step } from '../agents/lib/tasks.js';
import { callForStep } from '../agents/lib/tools.js';

const DIR = join(import.meta.dirname, '..', 'fixtures', 'agents');

type Raw = {
  type?: string;
  name?: string;
  parameters?: ToolDef['function']['parameters'];
  input_schema?: ToolDef['function']['parameters'];
  function?: ToolDef['function'];
};

/** The agent's first request's tools, as the chat-completions upstream sees function tools. */
function toolsOf(file: string): ToolDef[] {
  const body = (JSON.parse(readFileSync(join(DIR, file), 'utf8')) as { body: { tools?: Raw[] } }).body;
  return (body.tools ?? []).flatMap((t): ToolDef[] => {
    if (t.function) return [{ type: 'function', function: t.function }];
    if (t.type === 'custom' && t.name) {
      const parameters = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] };
      return [{ type: 'function', function: { name: t.name, parameters } }];
    }
    const parameters = t.input_schema ?? t.parameters;
    return t.name && parameters ? [{ type: 'function', function: { name: t.name, parameters } }] : [];
  });
}

/** The steps most agents' tasks take, in order. */
const EDIT_OPS: Step['op'][] = ['write', 'read', 'edit', 'run'];

/** Each agent's recorded first request, the steps it is given, and the tool each step must call. */
const AGENTS: Array<[agent: string, file: string, ops: Step['op'][], tools: string[]]> = [
  ['Claude Code', 'claude/01-POST-v1-messages-beta-true.json', EDIT_OPS, ['Write', 'Read', 'Edit', 'Bash']],
  ['opencode', 'opencode/02-POST-v1-chat-completions.json', EDIT_OPS, ['write', 'read', 'edit', 'bash']],
  [
    'Qwen Code',
    'qwen/01-POST-v1-chat-completions.json',
    EDIT_OPS,
    ['write_file', 'read_file', 'edit', 'run_shell_command'],
  ],
  ['pi', 'pi/01-POST-v1-chat-completions.json', EDIT_OPS, ['write', 'read', 'edit', 'bash']],
  [
    'Codex',
    'codex/01-POST-v1-responses.json',
    ['write', 'read', 'patch', 'run'],
    Array(4).fill('exec_command'),
  ],
  // Cline's editor writes a missing file from its new text; read_files takes a list of files.
  [
    'Cline',
    'cline/01-POST-v1-chat-completions.json',
    EDIT_OPS,
    ['editor', 'read_files', 'editor', 'run_commands'],
  ],
  [
    'Codex (freeform apply_patch)',
    'codex-freeform/01-POST-v1-responses.json',
    ['patch', 'edit'],
    ['apply_patch', 'apply_patch'],
  ],
];

const STEPS: Partial<Record<Step['op'], Step>> = {
  write: CORE_TASK.steps[0]!,
  read: EDIT_TASK.steps[0]!,
  edit: EDIT_TASK.steps[1]!,
  run: EDIT_TASK.steps[2]!,
  patch: PATCH_TASK.steps[0]!,
};

describe('agent suite model: steps onto the tools each agent declares', () => {
  it.each(AGENTS)('%s', (_agent, file, ops, names) => {
    const tools = toolsOf(file);
    ops.forEach((op, i) => {
      const call = callForStep(STEPS[op]!, tools, '/work');
      expect(call?.name, op).toBe(names[i]);
      const tool = tools.find((t) => t.function.name === call?.name)!;
      const required = (tool.function.parameters as { required?: string[] }).required ?? [];
      const args = call?.arguments as Record<string, unknown>;
      for (const key of required) expect(args, `${op}: ${key}`).toHaveProperty(key);
      // The arguments fit the schema the agent declared, as toolproof checks them: Cline 3.0.65's
      // read_files wants `files` as objects ({path}); given strings (which Cline itself takes),
      // toolproof re-asked the call and the script counted its feedback as a step done.
      const checked = validateArguments(tool.function.parameters as JsonObject, args);
      expect(checked.issues, op).toEqual([]);
    });
  });

  it('paths are absolute under the working directory; a patch is the apply_patch text', () => {
    const claude = toolsOf('claude/01-POST-v1-messages-beta-true.json');
    expect(callForStep(STEPS.write!, claude, '/w')).toEqual({
      name: 'Write',
      arguments: { file_path: '/w/proof.txt', content: '7391\n' },
    });
    const freeform = toolsOf('codex-freeform/01-POST-v1-responses.json');
    const text = (callForStep(STEPS.patch!, freeform, '/w')!.arguments as { input: string }).input;
    expect(text).toBe(
      '*** Begin Patch\n*** Update File: notes.txt\n@@\n-status: draft\n+status: final\n*** End Patch',
    );
  });
});

describe('agent suite model: the three habits', () => {
  const tools = toolsOf('pi/01-POST-v1-chat-completions.json');
  const user = { role: 'user' as const, content: CORE_TASK.prompt };
  const answer = (
    mode: 'leak' | 'prose' | 'clean',
    toolChoice: unknown,
    messages: ChatMessage[] = [user],
  ) => {
    const action = agentModel({ mode, task: CORE_TASK, cwd: '/w' })(turnContext(messages, tools));
    const out = generate(action, {
      personality: 'vllm',
      tools,
      toolChoice,
      ignoreRequired: false,
      maxTokens: null,
    });
    if (out.kind !== 'ok') throw new Error('error');
    return out.generation;
  };

  it.each([
    [
      'leak: the call as <tool_call> text under auto, a real call under required',
      'leak',
      /^<tool_call>\n\{"name": "write"/,
    ],
    ['prose: a claim under auto, the real call under required', 'prose', /I have created proof\.txt/],
  ] as const)('%s', (_name, mode, auto) => {
    expect(answer(mode, 'auto')).toMatchObject({ content: expect.stringMatching(auto), calls: [] });
    expect(answer(mode, 'required').calls.map((c) => c.name)).toEqual(['write']);
  });

  it('clean: a call; after the tool result, the final answer', () => {
    expect(answer('clean', 'auto').calls.map((c) => c.name)).toEqual(['write']);
    const history = [
      user,
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'write', arguments: '{}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'c1', content: 'ok' },
    ];
    expect(answer('clean', 'auto', history)).toMatchObject({ content: 'done', calls: [] });
  });
});

describe('agent suite model: real-length tasks (issue 31)', () => {
  const tools = toolsOf('claude/01-POST-v1-messages-beta-true.json');
  const user = (content: string) => ({ role: 'user' as const, content });
  const result = (id: string) => [
    {
      role: 'assistant' as const,
      content: null,
      tool_calls: [{ id, type: 'function' as const, function: { name: 'Bash', arguments: '{}' } }],
    },
    { role: 'tool' as const, tool_call_id: id, content: 'ok' },
  ];
  const act = (task: typeof PARALLEL_TASK, mode: 'leak' | 'clean', messages: ChatMessage[]) =>
    agentModel({ mode, task, cwd: '/w' })(turnContext(messages, tools));

  it('a parallel step is every call of it in one turn, in each habit; a client that ran one gets the other next', () => {
    const first = act(PARALLEL_TASK, 'clean', [user(PARALLEL_TASK.prompt)]);
    expect(first).toEqual({
      call: [
        { name: 'Read', arguments: { file_path: '/w/a.txt' } },
        { name: 'Read', arguments: { file_path: '/w/b.txt' } },
      ],
    });
    const leak = act(PARALLEL_TASK, 'leak', [user(PARALLEL_TASK.prompt)]);
    expect(leak).toMatchObject({ leak: { format: 'hermes', calls: [{ name: 'Read' }, { name: 'Read' }] } });
    const one = act(PARALLEL_TASK, 'clean', [user(PARALLEL_TASK.prompt), ...result('a')]);
    expect(one).toEqual({ call: [{ name: 'Read', arguments: { file_path: '/w/b.txt' } }] });
    const both = act(PARALLEL_TASK, 'clean', [user(PARALLEL_TASK.prompt), ...result('a'), ...result('b')]);
    expect(both).toMatchObject({ call: [{ name: 'Write', arguments: { content: '42\n' } }] });
    expect(position(PARALLEL_TASK, 3)).toEqual({ offset: 0 });
  });

  it('read-edit-run: the answer is the number the command printed; without one it runs the command once more, then quotes the last tool result (Qwen Code runs lost the number twice)', () => {
    const ran = (output: unknown, id = 'c') => [
      ...result(id).slice(0, 1),
      { role: 'tool' as const, tool_call_id: id, content: output } as ChatMessage,
    ];
    const start = [user(RUN_TASK.prompt), ...result('a'), ...result('b')];
    expect(act(RUN_TASK, 'clean', [...start, ...ran('Output: sum: 84\nExit Code: 0')])).toEqual({
      say: '84',
    });
    // The run's result as Qwen Code sends it (a list of text parts), here without the output.
    const empty = [{ type: 'text', text: 'Command: awk\nOutput: (empty)\nExit Code: 0' }];
    const command = { command: `awk '{print "sum:", $3 * 2}' count.txt` };
    expect(act(RUN_TASK, 'clean', [...start, ...ran(empty)])).toMatchObject({
      call: [{ name: 'Bash', arguments: command }],
    });
    expect(act(RUN_TASK, 'leak', [...start, ...ran(empty)])).toMatchObject({
      leak: { format: 'hermes', calls: [{ name: 'Bash', arguments: command }] },
    });
    const again = [...start, ...ran(empty), ...ran('Output: sum: 84\nExit Code: 0', 'd')];
    expect(act(RUN_TASK, 'clean', again)).toEqual({ say: '84' });
    expect(act(RUN_TASK, 'clean', [...start, ...ran(empty), ...ran(empty, 'd')])).toEqual({
      say: 'The number is not in what I was given. The last tool result was: "Command: awk\\nOutput: (empty)\\nExit Code: 0"',
    });
    // Every step done by a compaction's summary, no result in the history: it answers, it does not
    // run the command again (Kilo 7.7.7 in 16k compacted after each re-run and gave up).
    const summarized = [
      user(RUN_TASK.prompt),
      { role: 'assistant' as const, content: 'Summary of the work so far. [steps done: 3]' },
      user('Continue if you have next steps.'),
    ];
    expect(act(RUN_TASK, 'clean', summarized)).toEqual({
      say: 'The number is not in what I was given. No tool result came back.',
    });
  });

  it("a compaction carrying the previous summary (Cline 3.0.65's and Kilo 7.7.7's second) counts its steps and the turns since", () => {
    // The request Cline 3.0.65 sent for its second compaction in tests/agents/session-files (its
    // conversation written out as text, the tool results left empty by Cline), abridged.
    const ask = [
      'Summarize this session for continuation. Be concise and factual.',
      '',
      'Previous summary:\nSummary of the work so far. [steps done: 2]',
      '',
      'Conversation:',
      `[Bot tool calls]: run_commands(commands=["awk '{print $3}' count.txt"])`,
      '',
      '[Tool result]:',
    ].join('\n');
    const system = {
      role: 'system' as const,
      content:
        'Summarize the provided coding session into a concise continuation note with detailed next steps.',
    };
    const summary = agentModel({ mode: 'clean', task: RUN_TASK, cwd: '/w' })(
      turnContext([system, user(ask)], []),
    );
    expect(summary).toEqual({ say: 'Summary of the work so far. [steps done: 3]' });
    // Kilo 7.7.7's (tests/agents/session-files in 16k): the turns since, then its <prior-summary>.
    const kilo = [
      'Here is the conversation so far:\n\n<conversation>',
      '[Assistant tool call]: read({"filePath":"/w/screen.png"})',
      '[Tool result]: Image read successfully',
      '[Attached image/png: file]\n</conversation>\n',
      'Here is the summary of the conversation before the <conversation> above:\n',
      '<prior-summary>\nSummary of the work so far. [steps done: 1]\n</prior-summary>',
    ].join('\n');
    expect(
      agentModel({ mode: 'clean', task: RUN_TASK, cwd: '/w' })(turnContext([system, user(kilo)], [])),
    ).toEqual({ say: 'Summary of the work so far. [steps done: 2]' });
    // Without a previous summary: one step per result written out.
    const first = ask.replace('Previous summary:\nSummary of the work so far. [steps done: 2]', '');
    expect(
      agentModel({ mode: 'clean', task: RUN_TASK, cwd: '/w' })(turnContext([system, user(first)], [])),
    ).toEqual({ say: 'Summary of the work so far. [steps done: 1]' });
  });

  it('resume: the first run stops after its part; with the resume prompt in the history it goes on', () => {
    const history = [user(RESUME_TASK.prompt), ...result('a')];
    expect(act(RESUME_TASK, 'clean', history)).toEqual({ say: 'waiting' });
    const resumed = act(RESUME_TASK, 'clean', [...history, user(RESUME_TASK.resume!.prompt)]);
    expect(resumed).toMatchObject({
      call: [{ name: 'Bash', arguments: { command: 'echo two >> log.txt' } }],
    });
  });

  it("a sub-agent's conversation follows the sub-task; the main one delegates with the Agent tool", () => {
    const agentTool: ToolDef = {
      type: 'function',
      function: {
        name: 'Agent',
        parameters: {
          type: 'object',
          properties: { description: {}, prompt: {}, subagent_type: {} },
          required: ['description', 'prompt'],
        },
      },
    };
    const model = agentModel({ mode: 'clean', task: SUBAGENT_TASK, cwd: '/w' });
    const main = model(turnContext([user(SUBAGENT_TASK.prompt)], [...tools, agentTool]));
    expect(main).toMatchObject({
      call: [{ name: 'Agent', arguments: { subagent_type: 'general-purpose' } }],
    });
    const inner = (SUBAGENT_TASK.steps[0] as { task: typeof SUBAGENT_TASK }).task;
    const sub = model(turnContext([user(`<reminder/>${inner.prompt}`)], tools));
    expect(sub).toMatchObject({ call: [{ name: 'Write', arguments: { file_path: '/w/proof.txt' } }] });
  });

  it("fidelity: the bytes the model sends are the task's own, tabs, backslashes and non-ASCII included", () => {
    const call = (
      act(FIDELITY_TASK, 'clean', [user(FIDELITY_TASK.prompt)]) as unknown as {
        call: Array<{ arguments: { content: string } }>;
      }
    ).call[0]!;
    expect(call.arguments.content).toContain('C:\\tmp\\new\\x\t<tab>');
    expect(call.arguments.content).toContain('日本語 🚀');
  });

  it('a named call (a deferred tool) only once the tool is declared, its paths under the working directory', () => {
    const notebookEdit: ToolDef = {
      type: 'function',
      function: { name: 'NotebookEdit', parameters: { type: 'object' } },
    };
    const step = DEFERRED_TASK.steps[2]!;
    expect(callForStep(step, tools, '/w')).toBeUndefined();
    expect(callForStep(step, [...tools, notebookEdit], '/w')).toMatchObject({
      name: 'NotebookEdit',
      arguments: { notebook_path: '/w/nb.ipynb', new_source: 'print(7391)' },
    });
  });
});
