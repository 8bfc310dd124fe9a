/**
 * A non-interactive run with no permission switch of the user's own (cli/launch/recipes.ts
 * `headless`): `toolproof launch claude -- -p "create proof.txt …"` ran, Claude Code was refused
 * the write (nobody can answer its prompt), and the model said "done" with no file. The launcher
 * now adds the agent's narrowest switch for editing its folder, and says so.
 */
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { launchCommand } from '../../cli/launch/command.js';
import { RECIPES } from '../../cli/launch/recipes.js';
import type { CliIO } from '../../cli/probe/command.js';

const headless = (id: string, args: string[]) => RECIPES.find((r) => r.id === id)!.headless?.(args);
const TASK = 'create proof.txt containing 7391, then say done';

describe('a headless run without a permission switch of its own gets the one that lets the agent edit its folder', () => {
  it("claude -p: --permission-mode acceptEdits, after the user's arguments", () => {
    expect(headless('claude', ['-p', TASK])).toEqual({
      args: ['-p', TASK, '--permission-mode', 'acceptEdits'],
      added: '--permission-mode acceptEdits',
    });
    expect(headless('claude', ['--print', TASK])?.args).toEqual([
      '--print',
      TASK,
      '--permission-mode',
      'acceptEdits',
    ]);
    for (const own of [
      ['-p', TASK, '--permission-mode', 'plan'],
      ['-p', TASK, '--permission-mode=default'],
      ['-p', TASK, '--allowedTools', 'Read'],
      ['-p', TASK, '--disallowedTools', 'Write'],
      ['-p', TASK, '--dangerously-skip-permissions'],
      [], // interactive: Claude Code asks
    ])
      expect(headless('claude', own), own.join(' ')).toBeUndefined();
  });

  it('codex exec: --sandbox workspace-write right after exec (so `exec resume` takes it too)', () => {
    expect(headless('codex', ['exec', '--skip-git-repo-check', TASK])).toEqual({
      args: ['exec', '--sandbox', 'workspace-write', '--skip-git-repo-check', TASK],
      added: '--sandbox workspace-write',
    });
    expect(headless('codex', ['exec', 'resume', '--last', TASK])?.args).toEqual([
      'exec',
      '--sandbox',
      'workspace-write',
      'resume',
      '--last',
      TASK,
    ]);
    for (const own of [
      ['exec', '--sandbox', 'read-only', TASK],
      ['exec', '-s', 'danger-full-access', TASK],
      ['exec', '--full-auto', TASK],
      ['exec', '--dangerously-bypass-approvals-and-sandbox', TASK],
      ['exec', '-c', 'sandbox_mode=read-only', TASK],
      [TASK],
    ])
      expect(headless('codex', own), own.join(' ')).toBeUndefined();
  });

  it('qwen -p: --approval-mode auto-edit (edits, not the shell)', () => {
    expect(headless('qwen', ['-p', TASK])?.args).toEqual(['-p', TASK, '--approval-mode', 'auto-edit']);
    expect(headless('qwen', ['-p', TASK, '--yolo'])).toBeUndefined();
    expect(headless('qwen', ['-p', TASK, '--approval-mode', 'plan'])).toBeUndefined();
    expect(headless('qwen', ['--yolo', TASK])).toBeUndefined();
  });

  it('agents whose headless mode already writes get nothing', () => {
    for (const id of ['opencode', 'pi', 'cn', 'kilo', 'cline', 'grok'])
      expect(headless(id, ['-p', TASK]), id).toBeUndefined();
  });
});

describe('a URL where nothing healthy answers', () => {
  it('says how long it waited and that there may be no connection at all (it said "took the connection")', async () => {
    const sockets: Socket[] = [];
    const mute = createNetServer((s) => {
      sockets.push(s);
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    try {
      const err: string[] = [];
      const io = {
        stdout: { write: () => true },
        stderr: { write: (s: string) => err.push(s) > 0 },
      } as unknown as CliIO;
      const url = `http://127.0.0.1:${(mute.address() as AddressInfo).port}`;
      const code = await launchCommand(
        ['pi', '--url', url, '--print'],
        io,
        { PATH: '' },
        { healthWaitMs: 600 },
      );
      expect(code).toBe(1);
      expect(err.join('')).toContain('gave no healthy answer to GET /health within 1 s (no connection, or');
      expect(err.join('')).not.toContain('took the connection');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => mute.close(() => r()));
    }
  }, 20_000);
});
