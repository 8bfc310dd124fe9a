/**
 * The launcher's signal to the agent's tree (cli/launch/agent-process.ts agentTree) against a
 * process table and a kill of the test's own: a pid the tree once had that another program has
 * taken since (another start) is neither signalled nor waited for; a process of the tree that
 * its parent orphaned still is.
 */
import { describe, expect, it } from 'vitest';
import { agentTree, parseStat, type ProcInfo } from '../../cli/launch/agent-process.js';

const LAUNCHER = process.pid;
type Row = [pid: number, ppid: number, pgid: number, start: number];
const tableOf = (rows: Row[]) =>
  new Map<number, ProcInfo>([
    [LAUNCHER, { ppid: 1, pgid: LAUNCHER, zombie: false, start: 1 }],
    ...rows.map(([pid, ppid, pgid, start]): [number, ProcInfo] => [
      pid,
      { ppid, pgid, zombie: false, start },
    ]),
  ]);

function harness(first: Row[]) {
  let table = tableOf(first);
  const sent: Array<[number, string]> = [];
  const tree = agentTree(
    100,
    () => table,
    (target, signal) => sent.push([target, signal]),
  );
  return {
    tree,
    sent,
    set(rows: Row[]) {
      table = tableOf(rows);
      sent.length = 0;
    },
  };
}

describe('agentTree', () => {
  it("a pid another program took after the tree's process ended is not killed, nor waited for", () => {
    // The agent (100, the launcher's group) and a child in a group of its own (200).
    const h = harness([
      [100, LAUNCHER, LAUNCHER, 10],
      [200, 100, 200, 11],
    ]);
    h.tree.signal('SIGTERM');
    expect(h.sent.sort()).toEqual([
      [-200, 'SIGTERM'],
      [100, 'SIGTERM'],
      [200, 'SIGTERM'],
    ]);
    // Both ended; pid 200 now another program's (another start), a group leader of its own.
    h.set([[200, 1, 200, 500]]);
    expect(h.tree.alive()).toBe(false);
    h.tree.signal('SIGKILL');
    expect(h.sent).toEqual([]);
  });

  it('a child its parent orphaned is still the tree: signalled and waited for', () => {
    const h = harness([
      [100, LAUNCHER, LAUNCHER, 10],
      [300, 100, LAUNCHER, 12],
    ]);
    h.tree.signal('SIGTERM');
    // The agent exited on SIGTERM; its child, reparented to init, did not.
    h.set([[300, 1, LAUNCHER, 12]]);
    expect(h.tree.alive()).toBe(true);
    h.tree.signal('SIGKILL');
    expect(h.sent).toEqual([[300, 'SIGKILL']]);
  });

  it("reads a process's start from /proc's stat (its 22nd field)", () => {
    const stat = '4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200';
    expect(parseStat(stat)).toEqual({ ppid: 1, pgid: 4242, zombie: false, start: 987654 });
  });
});
