/**
 * Real-length tasks (issue 31): several turns each, every one checked on disk, so a step that was
 * skipped, run twice or mangled on the way shows.
 */
import type { Task } from './tasks.js';

/**
 * Read → edit → run, and the run's output in the answer: the scripted model quotes what the
 * command printed (finalFrom), a number only the edited file gives (2 × 42), so the answer proves
 * the edit landed, the command ran and its output reached the model.
 */
export const RUN_TASK: Task = {
  id: 'read-edit-run',
  prompt:
    'Read count.txt, change its total from 40 to 42, run awk on it to print twice the total, then tell me the number it printed.',
  files: { 'count.txt': 'total = 40\n' },
  steps: [
    { op: 'read', path: 'count.txt' },
    { op: 'edit', path: 'count.txt', old: 'total = 40', new: 'total = 42' },
    // The command's own text has `"sum:",` where the output has `sum: 84`: only the output matches.
    { op: 'run', command: `awk '{print "sum:", $3 * 2}' count.txt` },
  ],
  final: '84',
  finalFrom: /sum: (\d+)/,
  expect: { 'count.txt': 'total = 42\n' },
};

/** Two reads in one turn (parallel tool calls), then a write of their sum. */
export const PARALLEL_TASK: Task = {
  id: 'parallel',
  prompt: 'Read a.txt and b.txt (both at once), write their sum to sum.txt, then say done.',
  files: { 'a.txt': '17\n', 'b.txt': '25\n' },
  steps: [
    {
      op: 'parallel',
      steps: [
        { op: 'read', path: 'a.txt' },
        { op: 'read', path: 'b.txt' },
      ],
    },
    { op: 'write', path: 'sum.txt', content: '42\n' },
  ],
  final: 'done',
  expect: { 'sum.txt': '42\n' },
};

/** Eight shell calls in a row, each appending a line: a skipped or repeated call shows in the file. */
export const LOOP_TASK: Task = {
  id: 'loop-8',
  prompt: 'Append the numbers 1 to 8 to loop.txt, one echo command each, then say done.',
  files: {},
  steps: Array.from({ length: 8 }, (_, i) => ({ op: 'run' as const, command: `echo ${i + 1} >> loop.txt` })),
  final: 'done',
  expect: { 'loop.txt': '1\n2\n3\n4\n5\n6\n7\n8\n' },
};

/** Quotes, backslashes, tabs and non-ASCII, written then edited: the bytes on disk are checked. */
const FIDELITY_LINE = `say "hi" and 'bye'`;
const FIDELITY_EDITED = `say "hé" and 'adiós' \\ ç\t→ "\\n" stays`;
const FIDELITY_TEXT = (first: string) =>
  `${first}\npath C:\\tmp\\new\\x\t<tab>\tend\ncafé naïve 日本語 🚀 — “curly” ‘quotes’\n`;

export const FIDELITY_TASK: Task = {
  id: 'fidelity',
  prompt:
    'Create fidelity.txt with the exact text I give, then change its first line, keeping every byte of the rest; then say done.',
  files: {},
  steps: [
    { op: 'write', path: 'fidelity.txt', content: FIDELITY_TEXT(FIDELITY_LINE) },
    // Read back before the edit, as agents that refuse to edit an unread file want (Continue).
    { op: 'read', path: 'fidelity.txt' },
    { op: 'edit', path: 'fidelity.txt', old: FIDELITY_LINE, new: FIDELITY_EDITED },
  ],
  final: 'done',
  exact: true,
  expect: { 'fidelity.txt': FIDELITY_TEXT(FIDELITY_EDITED) },
};

/**
 * Two runs in one session: the first appends `one` and stops; the agent resumed (its own resume
 * switch) appends `two` from the history it restored. A resume that lost the history starts over
 * and appends `one` again.
 */
export const RESUME_TASK: Task = {
  id: 'resume',
  prompt: 'Append the word one to log.txt with echo, then stop and wait for me.',
  files: {},
  steps: [
    { op: 'run', command: 'echo one >> log.txt' },
    { op: 'run', command: 'echo two >> log.txt' },
  ],
  resume: { after: 1, say: 'waiting', prompt: 'Go on: append the word two to log.txt, then say done.' },
  final: 'done',
  expect: { 'log.txt': 'one\ntwo\n' },
};

/** Claude Code: the work is done by a sub-agent (its Agent tool), the main loop answers. */
export const SUBAGENT_TASK: Task = {
  id: 'subagent',
  prompt: 'Have a sub-agent create proof.txt containing 7391, then say done.',
  files: {},
  steps: [
    {
      op: 'delegate',
      description: 'Create proof.txt',
      task: {
        id: 'subagent-inner',
        prompt: 'SUB-AGENT TASK: create a file named proof.txt containing 7391, then report back.',
        files: {},
        steps: [{ op: 'write', path: 'proof.txt', content: '7391\n' }],
        final: 'created proof.txt',
        expect: {},
      },
    },
  ],
  final: 'done',
  expect: { 'proof.txt': '7391\n' },
};

/** A notebook of one code cell (nbformat 4). */
const NOTEBOOK = `${JSON.stringify(
  {
    cells: [
      { cell_type: 'code', id: 'c1', metadata: {}, source: ['print(1)'], outputs: [], execution_count: null },
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5,
  },
  null,
  1,
)}\n`;

/**
 * Claude Code: a deferred tool. NotebookEdit is listed by name only; the model loads its schema
 * with ToolSearch (`select:NotebookEdit`, answered with a tool_reference block), then calls it.
 */
export const DEFERRED_TASK: Task = {
  id: 'deferred-tool',
  prompt: 'Load the NotebookEdit tool, make the code cell of nb.ipynb print 7391, then say done.',
  files: { 'nb.ipynb': NOTEBOOK },
  steps: [
    { op: 'read', path: 'nb.ipynb' },
    { op: 'call', name: 'ToolSearch', arguments: { query: 'select:NotebookEdit' } },
    {
      op: 'call',
      name: 'NotebookEdit',
      arguments: {
        notebook_path: 'nb.ipynb',
        cell_id: 'c1',
        new_source: 'print(7391)',
        edit_mode: 'replace',
      },
      paths: ['notebook_path'],
    },
  ],
  final: 'done',
  expect: {},
  contains: { 'nb.ipynb': 'print(7391)' },
};

export const LONG_TASKS: readonly Task[] = [RUN_TASK, PARALLEL_TASK, LOOP_TASK, FIDELITY_TASK];
