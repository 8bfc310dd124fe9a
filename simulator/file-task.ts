/**
 * The demo model's one real skill: "create NAME containing TEXT[, then say WORD]". It finds the
 * agent's file-writing tool among the declared ones (by name, and by the path and content keys
 * of its schema), writes under the working directory the agent's prompt names, and after the
 * tool's result answers WORD. So `toolproof launch <agent> -- "create proof.txt containing 7391,
 * then say done"` does something checkable on the built-in simulator.
 */
import type { ChatMessage, ContentPart, ToolDef } from '../protocol/openai.js';
import type { ScriptedCall } from './types.js';

export interface FileTask {
  path: string;
  content: string;
  /** The word to answer with once the file is written ("then say done"). */
  final?: string;
}

function text(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: ContentPart) => (typeof p?.text === 'string' ? p.text : '')).join('\n');
}

// Bounded, anchored on words: linear on any input (no nested quantifiers).
const TASK =
  /\bcreate (?:a (?:new )?file (?:named |called )?)?[`'"]?([\w][\w.\-/]{0,200})[`'"]? (?:containing|with(?: the)? content) [`'"]?([^`'",\n]{1,500}?)[`'"]?(?:,|\.(?:\s|$)|\s+then\b|\s*$)/i;
const FINAL = /\bthen (?:say|answer|reply(?: with)?) [`'"]?(\w{1,40})/i;

/** The task in the conversation's user messages (the first one that states one). */
export function readFileTask(messages: readonly ChatMessage[]): FileTask | undefined {
  for (const m of messages) {
    if (m?.role !== 'user') continue;
    const body = text(m.content).slice(0, 200_000);
    const task = TASK.exec(body);
    if (!task) continue;
    const final = FINAL.exec(body)?.[1];
    return { path: task[1]!, content: task[2]!.trim(), ...(final ? { final } : {}) };
  }
  return undefined;
}

/** The working directory the agent told the model (Claude Code, opencode, Codex, Qwen Code, pi). */
export function workingDirectory(messages: readonly ChatMessage[]): string | undefined {
  for (const m of messages) {
    if (m?.role !== 'system' && m?.role !== 'user' && m?.role !== 'developer') continue;
    const body = text(m.content).slice(0, 200_000);
    const found =
      /<cwd>\s{0,10}(\/[^<\s]{1,500})\s{0,10}<\/cwd>/.exec(body) ??
      /(?:working directory|working in the directory|cwd)[ \w]{0,20}:\s{0,10}[`'"]?(\/[^\s`'"<]{0,500})/i.exec(
        body,
      );
    if (found) return found[1]!.replace(/[.,;)]+$/, '');
  }
  return undefined;
}

type Schema = { properties?: Record<string, unknown> };

// `editor`: Cline 3's one file tool (`path`, `new_text`; no `old_text` creates the file).
const WRITE_NAMES = [
  'Write',
  'write',
  'write_file',
  'create_file',
  'writeFile',
  'write_to_file',
  'create',
  'editor',
];
const PATH_KEYS = ['file_path', 'filePath', 'absolute_path', 'path', 'filename', 'filepath', 'file'];
const CONTENT_KEYS = ['content', 'contents', 'file_text', 'text', 'new_text'];

function keys(tool: ToolDef): string[] {
  return Object.keys((tool.function?.parameters as Schema | undefined)?.properties ?? {});
}

/** The call that writes the file with the first tool that can, or undefined. */
export function writeCall(
  task: FileTask,
  tools: readonly ToolDef[],
  cwd: string | undefined,
): ScriptedCall | undefined {
  const named = WRITE_NAMES.map((n) => tools.find((t) => t.function?.name === n)).filter(
    Boolean,
  ) as ToolDef[];
  for (const tool of named) {
    const props = keys(tool);
    const pathKey = PATH_KEYS.find((k) => props.includes(k));
    const contentKey = CONTENT_KEYS.find((k) => props.includes(k));
    if (!pathKey || !contentKey) continue;
    const path = task.path.startsWith('/') || !cwd ? task.path : `${cwd.replace(/\/$/, '')}/${task.path}`;
    return { name: tool.function.name, arguments: { [pathKey]: path, [contentKey]: `${task.content}\n` } };
  }
  // No write tool (Codex): the shell writes it.
  const shell = SHELL_NAMES.map((n) => tools.find((t) => t.function?.name === n)).find(Boolean);
  if (!shell) return undefined;
  const props = (shell.function.parameters as Schema | undefined)?.properties ?? {};
  const key = ['command', 'cmd', 'commands'].find((k) => k in props) ?? 'command';
  const line = `printf '%s\\n' ${quote(task.content)} > ${quote(task.path)}`;
  const array = (props[key] as { type?: unknown } | undefined)?.type === 'array';
  // An array `command` is one argv (Codex); `commands` is a list of whole command lines (Cline).
  const args: Record<string, unknown> = {
    [key]: !array ? line : key === 'commands' ? [line] : ['bash', '-lc', line],
  };
  if ('workdir' in props && cwd) args.workdir = cwd;
  if ('description' in props) args.description = `Write ${task.path}`;
  return { name: shell.function.name, arguments: args };
}

const SHELL_NAMES = [
  'exec_command',
  'shell_command',
  'shell',
  'Bash',
  'bash',
  'run_shell_command',
  'run_commands',
];

function quote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
