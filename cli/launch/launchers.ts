/**
 * The launches using a `toolproof --serve` that a launch started. Two agents in two terminals on
 * the default port: the first launch started the server, the second found it running; when the
 * first agent exited, its launcher stopped the server under the second, whose next turn found
 * nothing there ("Failed to connect"). Each launch on this machine now registers in
 * `$TMPDIR/toolproof-PORT.launchers/` (a file named by its pid, holding its start time); the
 * launch that started the server leaves it running while another registered launch lives, and
 * the server, its launcher gone, stops once none does (cli/main.ts).
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStat } from './agent-process.js';

/**
 * The folder of the launches using the toolproof on `port`, when it is this user's own private
 * folder (the temp folder is shared: another user's folder, or a link, is not used, and the
 * second launch then runs as before). `create`: made when absent.
 */
export function launchersDir(port: string, create: boolean): string | undefined {
  const dir = join(tmpdir(), `toolproof-${port}.launchers`);
  if (create)
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch {
      // there already, or not ours to make: checked below
    }
  try {
    const st = lstatSync(dir);
    const own = process.getuid === undefined || st.uid === process.getuid();
    return st.isDirectory() && own && (st.mode & 0o077) === 0 ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** When `pid` started (/proc's clock ticks), or undefined where /proc does not say. */
function startOf(pid: number): number | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.start;
  } catch {
    return undefined;
  }
}

function alive(pid: number, start: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A pid another process took since: not the launch that registered.
  const now = startOf(pid);
  return now === undefined || start === '' || String(now) === start;
}

/** Registers this process in `dir`; the function returned takes it out. */
export function register(dir: string): () => void {
  const file = join(dir, String(process.pid));
  try {
    writeFileSync(file, String(startOf(process.pid) ?? ''), { mode: 0o600 });
  } catch {
    return () => {};
  }
  return () => rmSync(file, { force: true });
}

/** The registered launches still running, other than this process; a dead one's file is removed. */
export function otherLaunchers(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names.slice(0, 10_000)) {
    const pid = Number(name);
    if (!/^\d{1,10}$/.test(name) || pid === process.pid) continue;
    let start = '';
    try {
      start = readFileSync(join(dir, name), 'utf8').slice(0, 32).trim();
    } catch {
      continue;
    }
    if (alive(pid, start)) live.push(pid);
    else rmSync(join(dir, name), { force: true });
  }
  return live;
}

/** Removes `dir` when it is empty (a launch that came meanwhile keeps it). */
export function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty, or gone
  }
}
