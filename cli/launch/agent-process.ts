/**
 * The agent's process and everything it started. A signal sent to the launcher alone (`kill PID`,
 * a supervisor's SIGTERM, a closed terminal's SIGHUP) used to be passed to the agent's first
 * process only: Qwen Code 0.24.4 relaunches itself in a child (and that one in another), and its
 * first process exits on SIGTERM without passing it on, so the two children went on running, the
 * launcher gone. Now the signal goes to every process of the agent's tree (and to each process
 * group in it other than the launcher's own), taken when the signal arrives, while every parent is
 * still there to name its children; what is left after a short grace period gets SIGKILL.
 *
 * The agent stays in the launcher's process group (no `detached`): on a terminal it needs the
 * foreground group (a process of another group reading the terminal is stopped), and a group
 * signal to the launcher's job (a CI runner's SIGKILL, `kill -- -PGID`) reaches it directly.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';

export interface ProcInfo {
  ppid: number;
  pgid: number;
  /** A zombie has ended; only its parent's wait is missing (a container's init may never reap). */
  zombie: boolean;
  /**
   * When it started (/proc's clock ticks since boot; undefined from ps): a pid seen again with
   * another start is another process, the one that had it having ended.
   */
  start?: number;
}

/** `/proc/PID/stat` → its parent, group and state (the name, in parentheses, may hold anything). */
export function parseStat(stat: string): ProcInfo | undefined {
  const close = stat.lastIndexOf(')');
  if (close === -1) return undefined;
  const fields = stat.slice(close + 2).split(' ');
  const [state, ppid, pgid] = fields;
  const p = Number(ppid);
  const g = Number(pgid);
  if (!state || !Number.isInteger(p) || !Number.isInteger(g)) return undefined;
  // starttime is the stat's 22nd field, the 20th after the name
  const start = Number(fields[19]);
  return {
    ppid: p,
    pgid: g,
    zombie: state === 'Z' || state === 'X',
    ...(Number.isInteger(start) ? { start } : {}),
  };
}

/** Every process: from /proc (Linux), else from `ps` (macOS); empty when neither answers. */
export function processTable(): Map<number, ProcInfo> {
  const table = new Map<number, ProcInfo>();
  let names: string[] | undefined;
  try {
    names = readdirSync('/proc');
  } catch {
    // no /proc
  }
  if (names) {
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const info = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
        if (info) table.set(Number(name), info);
      } catch {
        // gone meanwhile
      }
    }
    if (table.size > 0) return table;
  }
  try {
    const out = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,pgid=,stat='], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    });
    for (const line of out.split('\n')) {
      const [pid, ppid, pgid, stat] = line.trim().split(/\s+/);
      if (pid && ppid && pgid && stat)
        table.set(Number(pid), { ppid: Number(ppid), pgid: Number(pgid), zombie: stat.startsWith('Z') });
    }
  } catch {
    // no ps either: the agent's own process is still signalled
  }
  return table;
}

/** `roots` and every living descendant of them. */
export function treeOf(roots: Iterable<number>, table: ReadonlyMap<number, ProcInfo>): Set<number> {
  const children = new Map<number, number[]>();
  for (const [pid, info] of table) {
    const list = children.get(info.ppid);
    if (list) list.push(pid);
    else children.set(info.ppid, [pid]);
  }
  const tree = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (tree.has(pid)) continue;
    tree.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function send(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // gone already (ESRCH)
  }
}

/** The launcher's own group: never signalled as a group (its parent, a pipe's other end are in it). */
function ownGroup(table: ReadonlyMap<number, ProcInfo>): number {
  return table.get(process.pid)?.pgid ?? process.pid;
}

export interface AgentTree {
  /** Signals every process of the tree (those known before included) and their groups. */
  signal(signal: NodeJS.Signals): void;
  /** Whether any of them is still running. */
  alive(): boolean;
}

/**
 * The tree under `root`, remembered across signals: a parent that exits orphans its children.
 * Each process is remembered with its start as first seen: a pid (or a group's leader) seen later
 * with another start is another program's, whose pid was free again, and is left alone. Before,
 * the SIGKILL after the grace period went to every pid once seen, and a pid another program had
 * taken meanwhile kept the launcher waiting for it (another user's process, whose kill fails).
 * `table` and `kill`: the system's (tests give their own).
 */
export function agentTree(
  root: number,
  table: () => Map<number, ProcInfo> = processTable,
  kill: (target: number, signal: NodeJS.Signals) => void = send,
): AgentTree {
  const known = new Set<number>([root]);
  /** Each known pid's start when first seen (undefined: not known then). */
  const starts = new Map<number, number | undefined>();
  const groups = new Set<number>();
  /** Each group's leader's start when the group was first seen. */
  const leaders = new Map<number, number | undefined>();
  /** Whether `info` is the process first seen under its pid (or nothing says otherwise). */
  const same = (first: number | undefined, info: ProcInfo | undefined): boolean =>
    first === undefined || info?.start === undefined || info.start === first;
  const living = (now: ReadonlyMap<number, ProcInfo>) =>
    [...known].filter((pid) => {
      const info = now.get(pid);
      return info !== undefined && !info.zombie && same(starts.get(pid), info);
    });
  /** Whether group `g` may still be the tree's: its leader's pid not taken by another process. */
  const ours = (g: number, now: ReadonlyMap<number, ProcInfo>): boolean => same(leaders.get(g), now.get(g));
  return {
    signal(signal) {
      const now = table();
      const own = ownGroup(now);
      // The root too when the table lacks it (no /proc, no ps), unless its pid is another's now.
      const roots = same(starts.get(root), now.get(root)) ? living(now).concat(root) : living(now);
      for (const pid of treeOf(roots, now))
        if (!known.has(pid) || !starts.has(pid)) {
          known.add(pid);
          starts.set(pid, now.get(pid)?.start);
        }
      for (const pid of known) {
        const info = now.get(pid);
        const g = info?.pgid;
        if (g === undefined || g === own || groups.has(g) || !same(starts.get(pid), info)) continue;
        groups.add(g);
        leaders.set(g, now.get(g)?.start);
      }
      for (const g of groups) if (ours(g, now)) kill(-g, signal);
      // Only those still there (every one when there is no table to read).
      for (const pid of known) {
        const info = now.get(pid);
        if (now.size === 0 || (info !== undefined && same(starts.get(pid), info))) kill(pid, signal);
      }
    },
    alive() {
      const now = table();
      if (now.size === 0) {
        try {
          process.kill(root, 0);
          return true;
        } catch {
          return false;
        }
      }
      if (living(now).length > 0) return true;
      for (const info of now.values())
        if (groups.has(info.pgid) && !info.zombie && ours(info.pgid, now)) return true;
      return false;
    },
  };
}

/** How long the agent's tree has after the launcher's signal before SIGKILL. */
export const GRACE_MS = 5_000;

export interface RunOptions {
  /** On a terminal, Ctrl-C already reached the agent (the same foreground group). */
  tty?: boolean;
  graceMs?: number;
  onError?: (message: string) => void;
}

/**
 * Runs the agent; resolves to its exit status (128 + the signal's number when a signal ended it).
 * When the launcher gets SIGTERM or SIGHUP: 128 + that signal's number, once every process the
 * agent started has ended. SIGINT (not from a terminal) ends them the same way; the status is then
 * the agent's own when it exited by itself, 130 when it had to be killed.
 */
export function runAgent(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: RunOptions = {},
): Promise<number> {
  const tty = options.tty ?? process.stdin.isTTY === true;
  const graceMs = options.graceMs ?? GRACE_MS;
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: 'inherit', env });
    const tree = child.pid !== undefined ? agentTree(child.pid) : undefined;
    let received: NodeJS.Signals | undefined;
    let exited: number | undefined;
    let killAt = 0;
    let killed = false;
    let poll: NodeJS.Timeout | undefined;
    const finish = (code: number) => {
      if (poll) clearInterval(poll);
      for (const s of signals) process.off(s, forward);
      // SIGINT: the agent's own status when it took the interrupt and exited (bash's rule for a
      // child that handles it), 130 when it had to be killed.
      const interrupted = received === 'SIGINT' && !killed;
      resolve(received && !interrupted ? 128 + (constants.signals[received] ?? 0) : code);
    };
    // Until the whole tree is gone: SIGKILL once the grace period is over, then the status.
    const watch = () => {
      if (poll || !tree) return;
      poll = setInterval(() => {
        const alive = tree.alive();
        if (alive && Date.now() >= killAt) {
          tree.signal('SIGKILL');
          killed = true;
          killAt = Number.POSITIVE_INFINITY;
        }
        if (!alive && exited !== undefined) finish(exited);
      }, 100);
    };
    function forward(signal: NodeJS.Signals) {
      // From a terminal, Ctrl-C already reached the agent: a second one would read as a double
      // Ctrl-C, and an interactive agent takes one as "stop this turn", not as "exit".
      if (signal === 'SIGINT' && tty) return;
      if (received) {
        // A second signal: no more waiting.
        tree?.signal('SIGKILL');
        killed = true;
        killAt = Number.POSITIVE_INFINITY;
        return;
      }
      received = signal;
      killAt = Date.now() + graceMs;
      if (tree) tree.signal(signal);
      else child.kill(signal);
      watch();
    }
    for (const s of signals) process.on(s, forward);
    child.on('error', (err) => {
      options.onError?.(`cannot start ${bin}: ${err.message}`);
      exited = 127;
      received = undefined;
      finish(127);
    });
    child.on('exit', (code, signal) => {
      exited = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
      if (received) watch();
      else finish(exited);
    });
  });
}
