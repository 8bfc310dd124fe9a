/**
 * Maps a task step onto the tools an agent declared, by name and by the names in its schema:
 * Claude Code Write/Read/Edit/Bash, Codex shell/exec_command/apply_patch, opencode
 * write/read/edit/bash, Qwen Code write_file/read_file/replace/run_shell_command, pi
 * write/read/edit/bash, Cline editor/read_files/run_commands (its `editor` creates a missing file
 * from `new_text`), Continue Write/Read/Edit-shaped and Grok CLI create_file/view_file/bash; a
 * sub-agent step is Claude Code's Agent (formerly Task) tool. The tool list is the chat-completions one the upstream receives
 * (toolproof translates the Responses and Messages shapes onto it).
 */
import { join } from 'node:path';
import type { ScriptedCall } from '../../../simulator/index.js';
import type { ToolDef } from '../../../protocol/openai.js';
import type { Step } from './tasks.js';

type Schema = { properties?: Record<string, { type?: unknown; items?: unknown }>; required?: string[] };

const NAMES: Record<Step['op'], string[]> = {
  write: ['Write', 'write', 'write_file', 'create_file', 'create_new_file'],
  read: ['Read', 'read', 'read_file', 'view_file'],
  edit: ['Edit', 'edit', 'replace', 'str_replace_based_edit_tool', 'str_replace_editor', 'editor'],
  run: [
    'Bash',
    'bash',
    'run_shell_command',
    'exec_command',
    'shell_command',
    'shell',
    'local_shell',
    'run_terminal_command',
    'run_commands',
  ],
  patch: ['apply_patch'],
  parallel: [],
  delegate: ['Agent', 'Task'],
  call: [],
};

function find(tools: ToolDef[], op: Step['op']): ToolDef | undefined {
  for (const name of NAMES[op]) {
    const tool = tools.find((t) => t.function?.name === name);
    if (tool) return tool;
  }
  // A tool from an MCP server, as Claude Code names it: mcp__<server>__<tool>.
  for (const name of NAMES[op]) {
    const tool = tools.find(
      (t) => t.function?.name?.startsWith('mcp__') && t.function.name.endsWith(`__${name}`),
    );
    if (tool) return tool;
  }
  return undefined;
}

function props(tool: ToolDef): Schema['properties'] & object {
  return ((tool.function.parameters as Schema | undefined)?.properties ?? {}) as NonNullable<
    Schema['properties']
  >;
}

function key(tool: ToolDef, candidates: string[]): string | undefined {
  const p = props(tool);
  return candidates.find((c) => c in p);
}

const PATH_KEYS = ['file_path', 'filePath', 'absolute_path', 'path', 'filename', 'filepath', 'file'];
const OLD_KEYS = ['old_string', 'oldString', 'oldText', 'old_str', 'old_text'];
const NEW_KEYS = ['new_string', 'newString', 'newText', 'new_str', 'new_text'];
const CONTENT_KEYS = ['content', 'contents', 'fileContents', 'file_text', 'new_text'];

/** Tools whose call ends the agent's run with its answer (Cline's submit_and_exit). */
const COMPLETION: Record<string, (text: string) => Record<string, unknown>> = {
  submit_and_exit: (text) => ({ summary: text, verified: true }),
  attempt_completion: (text) => ({ result: text }),
};

/** The final answer as a call of the agent's completion tool, when it declares one. */
export function completionCall(tools: ToolDef[], text: string): ScriptedCall | undefined {
  for (const [name, args] of Object.entries(COMPLETION))
    if (tools.some((t) => t.function?.name === name)) return { name, arguments: args(text) };
  return undefined;
}

function pathArgs(tool: ToolDef, path: string, cwd: string): Record<string, unknown> {
  const k = key(tool, PATH_KEYS) ?? 'path';
  return { [k]: join(cwd, path) };
}

/** A shell command in the declared shape: a string, or argv (Codex's `shell`). */
function commandCall(tool: ToolDef, command: string, cwd: string): ScriptedCall {
  const p = props(tool);
  if ('commands' in p) return { name: tool.function.name, arguments: { commands: [command] } };
  const k = key(tool, ['command', 'cmd']) ?? 'command';
  const args: Record<string, unknown> = {
    [k]: p[k]?.type === 'array' ? ['bash', '-lc', command] : command,
  };
  if ('description' in p) args.description = `Run ${command}`;
  if ('workdir' in p) args.workdir = cwd;
  if ('is_background' in p) args.is_background = false;
  return { name: tool.function.name, arguments: args };
}

/** The apply_patch text (https://github.com/openai/codex apply-patch format). */
function patchText(path: string, old: string, replacement: string): string {
  return [
    '*** Begin Patch',
    `*** Update File: ${path}`,
    '@@',
    `-${old}`,
    `+${replacement}`,
    '*** End Patch',
  ].join('\n');
}

function addFileText(path: string, content: string): string {
  const lines = content.replace(/\n$/, '').split('\n');
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines.map((l) => `+${l}`), '*** End Patch'].join(
    '\n',
  );
}

/** apply_patch's one string input, whatever its property is called (`input`, `patch`). */
function patchCall(tool: ToolDef, text: string): ScriptedCall {
  const p = props(tool);
  const k = Object.keys(p).find((name) => p[name]?.type === 'string') ?? 'input';
  return { name: tool.function.name, arguments: { [k]: text } };
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function callForStep(step: Step, tools: ToolDef[], cwd: string): ScriptedCall | undefined {
  const shell = find(tools, 'run');
  const patch = find(tools, 'patch');
  switch (step.op) {
    case 'write': {
      // An editor that creates a missing file from its new text (Cline's) writes too.
      const tool = find(tools, 'write') ?? find(tools, 'edit');
      if (tool && key(tool, CONTENT_KEYS))
        return {
          name: tool.function.name,
          arguments: { ...pathArgs(tool, step.path, cwd), [key(tool, CONTENT_KEYS)!]: step.content },
        };
      if (patch) return patchCall(patch, addFileText(step.path, step.content));
      return shell && commandCall(shell, `printf %s ${shellQuote(step.content)} > ${step.path}`, cwd);
    }
    case 'read': {
      const tool = find(tools, 'read');
      if (tool) return { name: tool.function.name, arguments: pathArgs(tool, step.path, cwd) };
      // Cline 3.0.65's read_files declares `files` as objects ({path, start_line, end_line}); it
      // also takes bare strings, but toolproof checks a call against the schema declared.
      const many = tools.find((t) => t.function?.name === 'read_files');
      if (many) {
        const path = join(cwd, step.path);
        const items = props(many).files?.items as { type?: unknown } | undefined;
        return { name: 'read_files', arguments: { files: [items?.type === 'object' ? { path } : path] } };
      }
      return shell && commandCall(shell, `cat ${step.path}`, cwd);
    }
    case 'edit': {
      const tool = find(tools, 'edit');
      if (tool) {
        const p = props(tool);
        if ('edits' in p) {
          return {
            name: tool.function.name,
            arguments: {
              ...pathArgs(tool, step.path, cwd),
              edits: [{ oldText: step.old, newText: step.new }],
            },
          };
        }
        return {
          name: tool.function.name,
          arguments: {
            ...pathArgs(tool, step.path, cwd),
            [key(tool, OLD_KEYS) ?? 'old_string']: step.old,
            [key(tool, NEW_KEYS) ?? 'new_string']: step.new,
          },
        };
      }
      if (patch) return patchCall(patch, patchText(step.path, step.old, step.new));
      return undefined;
    }
    case 'patch': {
      const text = patchText(step.path, step.old, step.new);
      if (patch) return patchCall(patch, text);
      // Codex without the tool: `apply_patch` through its shell tool, which Codex intercepts.
      return shell && commandCall(shell, `apply_patch <<'EOF'\n${text}\nEOF`, cwd);
    }
    case 'run':
      return shell && commandCall(shell, step.command, cwd);
    case 'parallel':
      // One call per turn is all a step maps to: the model spreads a parallel step's calls over one turn.
      return undefined;
    case 'call': {
      if (!tools.some((t) => t.function?.name === step.name)) return undefined;
      const args = { ...step.arguments };
      for (const k of step.paths ?? []) args[k] = join(cwd, String(args[k]));
      return { name: step.name, arguments: args };
    }
    case 'delegate': {
      const tool = find(tools, 'delegate');
      if (!tool) return undefined;
      const args: Record<string, unknown> = { description: step.description, prompt: step.task.prompt };
      if ('subagent_type' in props(tool)) args.subagent_type = 'general-purpose';
      return { name: tool.function.name, arguments: args };
    }
  }
}
