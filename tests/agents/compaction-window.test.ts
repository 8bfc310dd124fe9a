/**
 * Real agent CLIs compacting through toolproof against a backend with a small window that it
 * enforces (the simulator as vLLM with --max-model-len 16384, or llama-server with that n_ctx: it
 * reports the window, the launcher hands it to the agent, and a longer prompt is the server's 400).
 *
 * - opencode, a pasted note over the window by itself: toolproof cuts that user turn to its head
 *   and tail (policies/truncation: a turn no compaction could make fit) before the backend sees it;
 *   or, where the backend refused the prompt first (the agent's cue), opencode compacts and its
 *   compaction (the conversation written out in its one user turn, the note whole, so over the
 *   window too) is cut. Either way no turn after is refused and the task is done. Before both cuts
 *   the compaction was relayed whole and refused, and opencode stopped with the task undone. Kilo,
 *   its fork, is refused once and compacts, its compaction written out in chunks that each fit.
 * - opencode, tool results that grow the session: its own auto-compaction (usage past the window
 *   less its output) is answered, and the task finishes from the summary.
 * - Qwen Code, Claude Code and pi in a 32k window: each one's own compaction (Qwen Code's
 *   <state_snapshot>, Claude Code's text-only ask, pi's conversation in one user turn) is answered;
 *   Qwen Code and Claude Code finish the task from the summary, pi compacts once it answered.
 *
 * Left out, as these CLIs behave headless: Claude Code refuses a prompt over the window itself
 * ("Prompt is too long", nothing sent); pi and Cline kept the prompt they were refused for, so
 * their compaction had nothing to summarise (toolproof now cuts a user turn over the window by
 * itself rather than relay it to be refused, as the opencode case shows; tests/e2e/turn-over-window
 * for every door); Codex exec stops at the backend's context_length_exceeded ("ran out of room") and
 * compacts only by model_auto_compact_token_limit (codex.test.ts). Codex and Cline cap a
 * command's output (about 10 KB and 8 KB), so it never nears the window by itself.
 */
import { expect, it } from 'vitest';
import { describeRun, runCase } from './lib/case.js';
import { checkPrefix } from './lib/prefix.js';
import { describeAgents } from './lib/suite.js';
import type { Task } from './lib/tasks.js';
import type { PiApi } from './lib/agents.js';

const WINDOW = 16_384;
/** A shell command printing `lines` lines of 100 ASCII characters (25 tokens each). */
const dump = (lines: number) => `head -c ${lines * 100} /dev/zero | tr '\\0' x | fold -w 100`;
/** `lines` lines of a pasted note, 22 tokens each. */
const notes = (lines: number) =>
  Array.from(
    { length: lines },
    (_, i) => `note ${i}: the quick brown fox jumps over the lazy dog near the river bank at dawn`,
  ).join('\n');

/** Two commands printing `first` and `second` lines, after a prompt with `pasted` lines of notes. */
function dumps(id: string, pasted: number, first: number, second: number): Task {
  return {
    id,
    prompt: `Run the two dump commands, then say done.${pasted ? `\n\nNotes:\n${notes(pasted)}` : ''}`,
    files: {},
    steps: [
      { op: 'run', command: dump(first) },
      { op: 'run', command: dump(second) },
    ],
    final: 'done',
    expect: {},
  };
}

/** About 22,000 tokens of notes: more than the 16k window by itself. */
const PASTED = dumps('pasted-over-window', 1000, 10, 10);
const GROWING = dumps('results-past-window', 0, 160, 280);

const server = { personality: 'vllm' as const, window: WINDOW };
const server32k = { personality: 'vllm' as const, window: 32_768 };
const chat = (r: Awaited<ReturnType<typeof runCase>>) =>
  r.logs.filter((l) => l.route === '/v1/chat/completions');
/** The truncation's note (policies/truncation) for a compaction cut to the window. */
const CUT = '(a compaction over the window)';
/** The truncation's marker in a user turn cut because it is over the window by itself. */
const TURN_CUT = "of this message's";

describeAgents('opencode 1.18.33: compaction over a 16k window through toolproof', () => {
  for (const personality of ['vllm', 'llama-server'] as const)
    it(`${personality}: a pasted note over the window: cut (the turn, or the compaction after a refusal), no turn after refused, the task done`, async () => {
      const r = await runCase({
        agent: 'opencode',
        mode: 'clean',
        task: PASTED,
        via: 'toolproof',
        model: { server: { personality, window: WINDOW } },
        timeoutMs: 60_000,
      });
      const why = describeRun(r);
      const statuses = chat(r).map((l) => l.status);
      // The note reached the backend cut, with toolproof's marker saying so: the user turn itself
      // (over the window by itself), or the compaction that carried it after a refusal.
      const cut = r.upstream.filter((u) => u.rawBody.includes(TURN_CUT) || u.rawBody.includes(CUT));
      expect(cut.length, why).toBeGreaterThan(0);
      // Every turn after the last refusal (none, when the turn was cut at once) is answered: the
      // note's turn or the compaction, both commands and the answer.
      const refused = statuses.lastIndexOf(400);
      expect(statuses.slice(refused + 1).length, why).toBeGreaterThanOrEqual(3);
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

/** A run through toolproof against the 32k window: exit 0, the task done, every turn answered. */
async function compacting(agent: 'qwen' | 'claude' | 'pi', task: Task, piApi?: PiApi) {
  const r = await runCase({
    agent,
    ...(piApi ? { piApi } : {}),
    mode: 'clean',
    task,
    via: 'toolproof',
    model: { server: server32k },
    timeoutMs: 60_000,
  });
  const why = describeRun(r);
  expect(r.run.exitCode, why).toBe(0);
  expect(r.disk, why).toEqual([]);
  expect(r.run.stdout, why).toMatch(/\bdone\s*$/);
  for (const l of r.logs.filter((l) => /^\/v1\/(chat|messages|responses)/.test(l.route ?? '')))
    expect(l.status, `${why}\n${JSON.stringify(l)}`).toBe(200);
  return { r, why };
}

/** The index of the first upstream request holding `marker` (the agent's compaction), checked found. */
function compactionAt(r: Awaited<ReturnType<typeof runCase>>, why: string, marker: string): number {
  const at = r.upstream.findIndex((u) => u.rawBody.includes(marker));
  expect(at, why).toBeGreaterThan(0);
  return at;
}

describeAgents('Kilo 7.7.7: compaction over a 16k window through toolproof', () => {
  // opencode's fork, with a compaction of its own that writes the conversation out in chunks that
  // each fit: the pasted note is refused once, Kilo compacts and finishes from its summary.
  it('a pasted note over the window: refused once, its compaction answered, the task done', async () => {
    const r = await runCase({
      agent: 'kilo',
      mode: 'clean',
      task: PASTED,
      via: 'toolproof',
      model: { server },
      timeoutMs: 60_000,
    });
    const why = describeRun(r);
    const statuses = chat(r).map((l) => l.status);
    expect(statuses, why).toContain(400);
    const refused = statuses.lastIndexOf(400);
    expect(statuses.slice(refused + 1).length, why).toBeGreaterThanOrEqual(4);
    for (const s of statuses.slice(refused + 1)) expect(s, why).toBe(200);
    // Its compaction of the refused note, in chunks that each fit.
    expect(
      r.upstream.some((u) => u.rawBody.includes('Do not mention chunking or compaction')),
      why,
    ).toBe(true);
    // Then the task's turns, none compacted again: with the launcher's reserve of a quarter of
    // the window (4,096) its own prompt and the summary passed its threshold (the window less that
    // reserve), and it compacted again before each step, twice (cli/launch/reserve.ts).
    expect(
      r.upstream.filter((u) => u.rawBody.includes('Do not mention the summary process')).length,
      why,
    ).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.run.stdout, why).toMatch(/\bdone\s*$/);
  });
});

describeAgents('Continue CLI 1.5.47: its compaction, which declares its tools, on a leaky model', () => {
  // A pasted note past its own threshold (its tokenizer's count over the window less its output
  // and a buffer), under the backend's 32k: it compacts at once, asking for the summary with its
  // tools declared. toolproof sends that turn `auto` (force-tool-use, compactionTurn); forced, the
  // model called the next command, the CLI ran it inside its compaction and compacted again after
  // each one: 13 requests, the commands run 6 times, the prefix broken 6 times.
  it('its compaction answered in text, each command run once, every turn extends the one before', async () => {
    const r = await runCase({
      agent: 'cn',
      mode: 'leak',
      task: dumps('cn-compact', 900, 10, 10),
      via: 'toolproof',
      model: { server: server32k },
      timeoutMs: 60_000,
    });
    const why = describeRun(r);
    expect(r.run.exitCode, why).toBe(0);
    expect(r.disk, why).toEqual([]);
    expect(r.run.stdout, why).toMatch(/\bdone\s*$/);
    for (const l of chat(r)) expect(l.status, `${why}\n${JSON.stringify(l)}`).toBe(200);
    // Its first request is the compaction, sent `auto`.
    expect(r.upstream[0]!.rawBody, why).toContain('concise summary of our conversation');
    expect((r.upstream[0]!.body as { tool_choice?: unknown }).tool_choice, why).toBe('auto');
    // After it: the two commands, each run once, and the answer, from the summary.
    const runs = new Set(
      r.upstream.flatMap((u) =>
        ((u.body as { messages?: Array<{ role?: string; tool_call_id?: string }> }).messages ?? [])
          .filter((m) => m.role === 'tool')
          .map((m) => m.tool_call_id),
      ),
    );
    expect(runs.size, why).toBe(2);
    expect(checkPrefix(r.upstream).breaks, why).toEqual([]);
  });
});

describeAgents('Qwen Code 0.24.4: auto-compaction in a 32k window through toolproof', () => {
  // ~26k tokens (its ~19k prompt and the notes) and a command's output pass its 85% threshold:
  // it compresses (its <state_snapshot> request) and goes on from the summary.
  it('its compression answered, the turn after carries the summary, the task done', async () => {
    const { r, why } = await compacting('qwen', dumps('qwen-compress', 350, 300, 10));
    const at = compactionAt(r, why, '<state_snapshot>');
    const after = r.upstream.slice(at + 1);
    expect(after.length, why).toBeGreaterThan(0);
    expect(after[0]!.rawBody, why).toContain('[steps done:');
  });
});

describeAgents('Claude Code 2.1.332: auto-compaction in a 32k window through toolproof', () => {
  // Its ~12k-token prompt and 200 lines of output pass its threshold for a 32k window: it compacts
  // (its text-only ask) and finishes from the summary.
  it('its compaction answered, the turn after carries the summary, the task done', async () => {
    const { r, why } = await compacting('claude', dumps('claude-compact', 0, 200, 300));
    const at = compactionAt(r, why, 'CRITICAL: Respond with TEXT ONLY');
    const after = r.upstream
      .slice(at + 1)
      .filter((u) => !u.rawBody.includes('CRITICAL: Respond with TEXT ONLY'));
    expect(after.length, why).toBeGreaterThan(0);
    expect(after.at(-1)!.rawBody, why).toContain('[steps done:');
  });
});

describeAgents('pi 0.73.1: compaction in a 32k window through toolproof', () => {
  // 35k tokens of output past its reserve (16k of the window): once its answer is in, pi compacts
  // the session (the conversation written out in one user turn), answered.
  for (const api of ['openai-completions', 'openai-responses', 'anthropic-messages'] as const)
    it(`${api}: its compaction answered after the task`, async () => {
      const { r, why } = await compacting('pi', dumps('pi-compact', 0, 400, 1000), api);
      const at = compactionAt(r, why, 'kept suffix');
      expect((r.upstream[at]!.body as { tools?: unknown[] }).tools ?? [], why).toEqual([]);
    });
});
