/**
 * A small OpenAI Agents SDK program, as a user writes one: an Agent with four function tools
 * (write, read, replace, shell), run on the task given as its last argument, streamed with
 * `--stream`. It configures nothing itself: `toolproof launch openai-agents -- node
 * openai-agents.mjs TASK` sets OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_DEFAULT_MODEL (the
 * Agent names no model), and TOOLPROOF_OPENAI_API picks chat completions or Responses. Prints the
 * final output; exits 3 when the streamed text does not end with it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Agent, run, setOpenAIAPI, tool } from '@openai/agents';
import { z } from 'zod';

const args = process.argv.slice(2);
const stream = args.includes('--stream');
const task = args.filter((a) => a !== '--stream').at(-1);
if (!task) {
  process.stderr.write('usage: node openai-agents.mjs [--stream] TASK\n');
  process.exit(2);
}
if (process.env.TOOLPROOF_OPENAI_API) setOpenAIAPI(process.env.TOOLPROOF_OPENAI_API);

const tools = [
  tool({
    name: 'write_file',
    description: 'Create or overwrite a file with the given content.',
    parameters: z.object({ file_path: z.string(), content: z.string() }),
    execute: async ({ file_path, content }) => {
      writeFileSync(resolve(file_path), content);
      return `wrote ${content.length} characters to ${file_path}`;
    },
  }),
  tool({
    name: 'read_file',
    description: 'Read a text file.',
    parameters: z.object({ file_path: z.string() }),
    execute: async ({ file_path }) => readFileSync(resolve(file_path), 'utf8'),
  }),
  tool({
    name: 'replace',
    description: 'Replace the exact text old_string with new_string in a file.',
    parameters: z.object({ file_path: z.string(), old_string: z.string(), new_string: z.string() }),
    execute: async ({ file_path, old_string, new_string }) => {
      const text = readFileSync(resolve(file_path), 'utf8');
      if (!text.includes(old_string)) return `old_string not found in ${file_path}`;
      writeFileSync(resolve(file_path), text.replace(old_string, new_string));
      return `replaced in ${file_path}`;
    },
  }),
  tool({
    name: 'run_shell_command',
    description: 'Run a shell command in the working directory; returns its output.',
    parameters: z.object({ command: z.string() }),
    execute: async ({ command }) => {
      try {
        return (
          execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8', timeout: 10_000 }) || '(no output)'
        );
      } catch (err) {
        return `failed: ${err.message}`;
      }
    },
  }),
];

const agent = new Agent({
  name: 'coder',
  instructions: 'You are a coding agent. Use the tools to do what the user asks, then answer briefly.',
  tools,
});

let output;
if (stream) {
  const result = await run(agent, task, { stream: true });
  let streamed = '';
  for await (const text of result.toTextStream()) streamed += text;
  await result.completed;
  output = String(result.finalOutput ?? '');
  if (!streamed.endsWith(output)) {
    process.stderr.write(`streamed text ${JSON.stringify(streamed)} does not end with the final output\n`);
    process.stdout.write(`${output}\n`);
    process.exit(3);
  }
} else {
  output = String((await run(agent, task)).finalOutput ?? '');
}
process.stdout.write(`${output}\n`);
