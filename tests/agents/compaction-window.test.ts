/**
 * Real agent CLIs compacting through toolproof against a backend with a small window that it
 * enforces (the simulator as vLLM with --max-model-len 16384: it reports the window, the launcher
 * hands it to the agent, and a longer prompt is vLLM's 400).
 *
 * - opencode, a pasted note over the window: the first turn is refused as context_length_exceeded
 *   (the agent's cue), opencode compacts, and its compaction (the conversation written out in its
 *   one user turn, the note whole, so over the window too) is cut by toolproof (policies/truncation)
 *   and answered; the turns after it carry the summary and finish the task. Before that cut the
 *   compaction was relayed whole and refused, and opencode stopped with the task undone.
 *   `opencode run` still exits 1: it reports the refusal it compacted after.
 * - opencode, tool results that grow the session: its own auto-compaction (usage past the window
 *   less its output) is answered, and the task finishes from the summary.
 */
import { expect, it } from 'vitest';
import { describeRun, runCase } from './lib/case.js';
import { describeAgents } from './lib/suite.js';
import type { Task } from './lib/tasks.js';

const WINDOW = 16_384;
/** A shell command printing `lines` lines of 100 ASCII characters (25 tokens each). */
const dump = (lines: number) => `head -c ${lines * 100} /dev/zero | tr '\\0' x | fold -w 100`;
/** About 22,000 tokens of a pasted note: more than the window by itself. */
const NOTE = Array.from(
  { length: 1000 },
  (_, i) => `note ${i}: the quick brown fox jumps over the lazy dog near the river bank at dawn`,
).join('\n');

const PASTED: Task = {
  id: 'pasted-over-window',
  prompt: `Run the two dump commands, then say done.\n\nNotes:\n${NOTE}`,
  files: {},
  steps: [
    { op: 'run', command: dump(10) },
    { op: 'run', command: dump(10) },
  ],
  final: 'done',
  expect: {},
};

const GROWING: Task = {
  id: 'results-past-window',
  prompt: 'Run the two dump commands, then say done.',
  files: {},
  steps: [
    { op: 'run', command: dump(160) },
    { op: 'run', command: dump(280) },
  ],
  final: 'done',
  expect: {},
};

const server = { personality: 'vllm' as const, window: WINDOW };
const chat = (r: Awaited<ReturnType<typeof runCase>>) =>
  r.logs.filter((l) => l.route === '/v1/chat/completions');
/** The truncation's note (policies/truncation) for a compaction cut to the window. */
const CUT = '(a compaction over the window)';

describeAgents('opencode 1.18.33: compaction over a 16k window through toolproof', () => {
  it('a pasted note over the window: refused once, the compaction (over the window) cut and answered, the task done', async () => {
    const r = await runCase({
      agent: 'opencode',
      mode: 'clean',
      task: PASTED,
      via: 'toolproof',
      model: { server },
      timeoutMs: 60_000,
    });
    const why = describeRun(r);
    const statuses = chat(r).map((l) => l.status);
    // The refusal is the cue (its title request, with the note, is refused too).
    expect(statuses, why).toContain(400);
    const refused = statuses.lastIndexOf(400);
    // The compaction reached the backend cut, with the note saying so, and was answered.
    const cut = r.upstream.filter((u) => u.rawBody.includes(CUT));
    expect(cut.length, why).toBe(1);
    expect(cut[0]!.rawBody, why).toContain('Do not mention the summary process');
    // Every turn after the refusal is answered: the compaction, both commands and the answer.
    expect(statuses.slice(refused + 1).length, why).toBeGreaterThanOrEqual(4);
    for (const s of statuses.slice(refused + 1)) expect(s, why).toBe(200);
    expect(r.disk, why).toEqual([]);
    expect(r.run.stdout, why).toMatch(/\bdone\s*$/);
  });

  it('tool results past the window: its own auto-compaction answered, the task done', async () => {
    const r = await runCase({
      agent: 'opencode',
      mode: 'clean',
      task: GROWING,
      via: 'toolproof',
      model: { server },
      timeoutMs: 60_000,
    });
    const why = describeRun(r);
    expect(r.run.exitCode, why).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.run.stdout, why).toMatch(/\bdone\s*$/);
    for (const l of chat(r)) expect(l.status, `${why}\n${JSON.stringify(l)}`).toBe(200);
    // The compaction: a request without tools asking for the summary; the turn after it carries
    // the summary instead of the results.
    const summaryAt = r.upstream.findIndex((u) => u.rawBody.includes('Do not mention the summary process'));
    expect(summaryAt, why).toBeGreaterThan(0);
    const after = r.upstream
      .slice(summaryAt + 1)
      .filter((u) => (u.body as { tools?: unknown[] }).tools?.length);
    expect(after.length, why).toBeGreaterThan(0);
    expect(after[0]!.rawBody, why).toContain('[steps done: 2]');
  });
});
