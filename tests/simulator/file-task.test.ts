import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import type { ToolDef } from '../../protocol/openai.js';
import { readFileTask, workingDirectory, writeCall } from '../../simulator/file-task.js';

const tool = (name: string, props: Record<string, unknown>): ToolDef => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: props } },
});

describe('the demo model reads "create NAME containing TEXT"', () => {
  it('reads the task, the final word and the working directory', () => {
    const messages = [
      { role: 'system' as const, content: "I'm currently working in the directory: /tmp/w\nmore" },
      { role: 'user' as const, content: 'create proof.txt containing 7391, then say done' },
    ];
    expect(readFileTask(messages)).toEqual({ path: 'proof.txt', content: '7391', final: 'done' });
    expect(workingDirectory(messages)).toBe('/tmp/w');
  });

  it("writes with the agent's write tool, or its shell", () => {
    const task = { path: 'p.txt', content: "it's" };
    expect(writeCall(task, [tool('Write', { file_path: {}, content: {} })], '/w')).toEqual({
      name: 'Write',
      arguments: { file_path: '/w/p.txt', content: "it's\n" },
    });
    expect(writeCall(task, [tool('exec_command', { cmd: { type: 'string' } })], '/w')).toEqual({
      name: 'exec_command',
      arguments: { cmd: `printf '%s\\n' 'it'\\''s' > 'p.txt'` },
    });
    expect(writeCall(task, [tool('Read', { file_path: {} })], '/w')).toBeUndefined();
  });

  it("writes with Cline 3's tools: `editor` (path, new_text), else `run_commands` (a list of lines)", () => {
    const task = { path: 'proof.txt', content: '7391' };
    const editor = tool('editor', { path: {}, old_text: {}, new_text: {}, insert_line: {} });
    const commands = tool('run_commands', { commands: { type: 'array', items: { type: 'string' } } });
    expect(writeCall(task, [tool('read_files', { files: {} }), commands, editor], '/w')).toEqual({
      name: 'editor',
      arguments: { path: '/w/proof.txt', new_text: '7391\n' },
    });
    expect(writeCall(task, [commands], '/w')).toEqual({
      name: 'run_commands',
      arguments: { commands: [`printf '%s\\n' '7391' > 'proof.txt'`] },
    });
  });

  it('costs linear time on long input with no task in it', () => {
    const long = `create ${'a'.repeat(100_000)} containing ${'b,'.repeat(50_000)}`;
    const t0 = processCpuMs();
    expect(readFileTask([{ role: 'user', content: long }])).toBeUndefined();
    expect(processCpuMs() - t0).toBeLessThan(500);
  });
});
