/**
 * A small Claude Agent SDK program, as a user writes one: `query()` on the task given as its last
 * argument, with Claude Code's Write, Read, Edit and Bash allowed, streaming its messages; the
 * last `result` message's text is printed. With `--mcp`, files are written by the program's own
 * tool instead (an in-process MCP server, createSdkMcpServer: `mcp__files__write_file`), Write
 * being disallowed. It configures nothing itself: `toolproof launch
 * claude-agent-sdk -- node claude-agent-sdk.mjs TASK` sets the environment the Claude Code binary
 * the SDK runs reads (query's `options.env` defaults to the program's own). With
 * `--launcher-settings` it passes the launch's settings file as `settings` (docs/agents-setup.md),
 * which ranks above the user's and the project's Claude settings files.
 *
 * CLAUDE_AGENT_SDK_DIR is test plumbing: the suite's SDK is in the agents cache
 * (scripts/install-agents.mjs), where an import by name from this folder does not find it.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';

const args = process.argv.slice(2);
const mcp = args.includes('--mcp');
const launcherSettings = args.includes('--launcher-settings');
const task = args.filter((a) => a !== '--mcp' && a !== '--launcher-settings').at(-1);
if (!task) {
  process.stderr.write('usage: node claude-agent-sdk.mjs TASK\n');
  process.exit(2);
}
const dir = process.env.CLAUDE_AGENT_SDK_DIR;
const { createSdkMcpServer, query, tool } = await import(
  dir ? pathToFileURL(join(dir, 'sdk.mjs')).href : '@anthropic-ai/claude-agent-sdk'
);

const files = createSdkMcpServer({
  name: 'files',
  tools: [
    tool(
      'write_file',
      'Create or overwrite a file with the given content.',
      { file_path: z.string(), content: z.string() },
      async ({ file_path, content }) => {
        writeFileSync(resolve(file_path), content);
        return { content: [{ type: 'text', text: `wrote ${content.length} characters to ${file_path}` }] };
      },
      { alwaysLoad: true },
    ),
  ],
});

let result;
for await (const message of query({
  prompt: task,
  options: {
    cwd: process.cwd(),
    permissionMode: 'acceptEdits',
    allowedTools: ['Write', 'Read', 'Edit', 'Bash', ...(mcp ? ['mcp__files__write_file'] : [])],
    ...(mcp ? { mcpServers: { files }, disallowedTools: ['Write'] } : {}),
    persistSession: false,
    ...(launcherSettings ? { settings: process.env.TOOLPROOF_CLAUDE_SETTINGS } : {}),
  },
})) {
  if (message.type === 'result') result = message;
}
if (!result) {
  process.stderr.write('no result message\n');
  process.exit(1);
}
process.stdout.write(`${result.subtype === 'success' ? result.result : JSON.stringify(result)}\n`);
process.exit(result.is_error || result.subtype !== 'success' ? 1 : 0);
