/**
 * The launcher's note for a non-interactive run that cannot write (cli/launch/recipes.ts
 * `headlessNote`): `toolproof launch claude -- -p "create proof.txt …"` ran, Claude Code was
 * refused the write, and the model said "done" with no file; the launcher never loosens an
 * agent's permissions, so it names the agent's own switch instead.
 */
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { launchCommand } from '../../cli/launch/command.js';
import { RECIPES } from '../../cli/launch/recipes.js';
import type { CliIO } from '../../cli/probe/command.js';

const note = (id: string, args: string[]) => RECIPES.find((r) => r.id === id)!.headlessNote?.(args);
const TASK = 'create proof.txt containing 7391, then say done';

describe('a headless run without the switch that lets the agent write gets a note', () => {
  it('claude -p without a permission', () => {
    expect(note('claude', ['-p', TASK])).toMatch(/--permission-mode acceptEdits/);
    expect(note('claude', ['--print', TASK])).toMatch(/--permission-mode acceptEdits/);
    for (const ok of [
      ['-p', TASK, '--permission-mode', 'acceptEdits'],
      ['-p', TASK, '--permission-mode=acceptEdits'],
      ['-p', TASK, '--allowedTools', 'Write'],
      ['-p', TASK, '--dangerously-skip-permissions'],
      [], // interactive: Claude Code asks
    ])
      expect(note('claude', ok), ok.join(' ')).toBeUndefined();
  });

  it('codex exec in its read-only default sandbox', () => {
    expect(note('codex', ['exec', '--skip-git-repo-check', TASK])).toMatch(/--sandbox workspace-write/);
    for (const ok of [
      ['exec', '--sandbox', 'workspace-write', TASK],
      ['exec', '-s', 'danger-full-access', TASK],
      ['exec', '--dangerously-bypass-approvals-and-sandbox', TASK],
      ['exec', '-c', 'sandbox_mode=workspace-write', TASK],
      [TASK],
    ])
      expect(note('codex', ok), ok.join(' ')).toBeUndefined();
  });

  it('qwen -p under its approval policy', () => {
    expect(note('qwen', ['-p', TASK])).toMatch(/--yolo/);
    expect(note('qwen', ['-p', TASK, '--yolo'])).toBeUndefined();
    expect(note('qwen', ['-p', TASK, '--approval-mode', 'auto-edit'])).toBeUndefined();
    expect(note('qwen', ['--yolo', TASK])).toBeUndefined();
  });

  it('agents whose headless mode writes need no note', () => {
    for (const id of ['opencode', 'pi', 'cn', 'kilo', 'cline', 'grok'])
      expect(note(id, ['-p', TASK]), id).toBeUndefined();
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
        { healthWaitMs: 1_500 },
      );
      expect(code).toBe(1);
      expect(err.join('')).toContain('gave no healthy answer to GET /health within 2 s (no connection, or');
      expect(err.join('')).not.toContain('took the connection');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => mute.close(() => r()));
    }
  }, 20_000);
});
