/**
 * `toolproof launch` starts the server with its log in the shared temp folder under a name anyone
 * can guess (toolproof-<port>.log). Opened with a plain append, a name another user took first was
 * followed: a symbolic link there sent the log's lines into whatever file it pointed at (one of
 * the launching user's own), and a FIFO hung the launch at the open. openServerLog now keeps only
 * a regular file of this user, and otherwise writes to a private folder of its own.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openServerLog } from '../../cli/launch/server.js';

/** The folders a test made, and the private ones openServerLog made instead: each run left five. */
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const shared = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-log-test-'));
  made.push(dir);
  return dir;
};

/** openServerLog, its private folder (when it made one) removed after the test. */
const open = (path: string) => {
  const log = openServerLog(path);
  if (log.path !== path) made.push(dirname(log.path));
  return log;
};

describe('openServerLog', () => {
  it('appends to its own regular file across runs', () => {
    const path = join(shared(), 'toolproof-8787.log');
    writeFileSync(path, 'run 1\n');
    const log = open(path);
    writeSync(log.fd, 'run 2\n');
    closeSync(log.fd);
    expect(log.path).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe('run 1\nrun 2\n');
  });

  it('does not follow a symbolic link left at its name', () => {
    const dir = shared();
    const victim = join(dir, 'bashrc');
    writeFileSync(victim, 'export PATH=/usr/bin\n');
    const path = join(dir, 'toolproof-8787.log');
    symlinkSync(victim, path);
    const log = open(path);
    writeSync(log.fd, 'server log line\n');
    closeSync(log.fd);
    expect(readFileSync(victim, 'utf8')).toBe('export PATH=/usr/bin\n');
    expect(log.path).not.toBe(path);
    expect(dirname(log.path)).not.toBe(dir);
    expect(readFileSync(log.path, 'utf8')).toBe('server log line\n');
  });

  it('does not hang on a FIFO left at its name', () => {
    const path = join(shared(), 'toolproof-8787.log');
    execFileSync('mkfifo', [path]);
    const log = open(path);
    closeSync(log.fd);
    expect(log.path).not.toBe(path);
  });
});
