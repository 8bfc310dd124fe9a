/**
 * One GPU, several agents on one key: the real CLIs behind a key with `concurrency: 1` while
 * another client's request holds the slot (lib/hold.ts), released some seconds after the agent's
 * first request met the cap. Codex 0.171 sends a refused request again 5 times, 1 s apart, then
 * ends its turn; opencode gives up after about 10 s of 429s (docs/operations.md, "What an agent
 * does with a refusal"). Held longer than that, their session lives only through the key's queue
 * (queueTimeoutMs): the request waits for the slot and the turn completes. The proofs run the
 * same with the queue off (queueTimeoutMs: 0, the 429 at once, as before the queue): the agent
 * gives up and exits 1. Claude Code and Qwen Code retry a 429 for minutes: they finish either way.
 */
import { expect, it } from 'vitest';
import type { AgentId } from './lib/agents.js';
import { type CaseResult, describeRun, runCase } from './lib/case.js';
import { HOLD_MODEL, holdConfig, sendHolder, startHold } from './lib/hold.js';
import { SUITE_KEY } from './lib/plan.js';
import { describeAgents } from './lib/suite.js';
import { CORE_TASK } from './lib/tasks.js';

const API: Partial<Record<AgentId, string>> = {
  codex: 'responses',
  claude: 'messages',
  opencode: 'chat',
  qwen: 'chat',
};

/** A sum of the series of `name` on toolproof's /metrics (0 when it cannot be read). */
async function metric(origin: string, name: string): Promise<number> {
  const text = await fetch(`${origin}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
  let n = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) n += Number(line.split(' ').at(-1));
  return n;
}

/**
 * Runs `agent` behind the suite's key with `key`'s limits, a holder in its one slot until
 * `releaseMs` after the agent's first request met the cap (waiting in the key's queue, or refused).
 */
async function behindBusyKey(
  agent: AgentId,
  key: Record<string, unknown>,
  releaseMs: number,
): Promise<CaseResult & { holder: number | undefined }> {
  const hold = await startHold();
  let holder: number | undefined;
  try {
    const r = await runCase({
      agent,
      mode: 'clean',
      task: CORE_TASK,
      via: 'toolproof',
      // The key `toolproof launch` hands the agent, as a user of a keyed toolproof passes it.
      target: { env: { TOOLPROOF_API_KEY: SUITE_KEY } },
      file: (sim) => {
        hold.forwardTo(sim);
        return holdConfig(hold.url, { concurrency: 1, ...key });
      },
      beforeRun: async (origin) => {
        void sendHolder(origin).then(
          (status) => {
            holder = status;
          },
          () => {},
        );
        await hold.held;
        void (async () => {
          // The agent's first request waits in the key's queue, or was refused for the cap.
          for (let i = 0; i < 1200; i++) {
            const met =
              (await metric(origin, 'toolproof_key_queue_depth')) +
              (await metric(origin, 'toolproof_key_refusals_total'));
            if (met > 0) break;
            await new Promise((res) => setTimeout(res, 100));
          }
          await new Promise((res) => setTimeout(res, releaseMs));
          hold.release();
        })();
      },
    });
    return { ...r, holder };
  } finally {
    await hold.close();
  }
}

// Past the retry budgets measured (docs/operations.md): Codex 0.171 sends a refused request 5
// more times, 1 s apart (its Retry-After), opencode 1.18 gives up after about 10 s of 429s.
const PAST_CODEX_RETRIES_MS = 10_000;
const PAST_OPENCODE_RETRIES_MS = 20_000;

describeAgents('agents behind a key at its concurrency cap', () => {
  for (const [agent, holdMs] of [
    ['codex', PAST_CODEX_RETRIES_MS],
    ['opencode', PAST_OPENCODE_RETRIES_MS],
  ] as const) {
    it(`${agent}: its request waits in the key's queue for the slot, and the session goes on`, async () => {
      const r = await behindBusyKey(agent, {}, holdMs);
      const why = describeRun(r);
      expect(r.holder, why).toBe(200);
      expect(r.run.exitCode, why).toBe(0);
      expect(r.disk, why).toEqual([]);
      expect(r.text, why).toMatch(new RegExp(`\\b${CORE_TASK.final}\\b`, 'i'));
      const statuses = r.logs
        .filter((l) => l.api === API[agent] && l.model !== HOLD_MODEL)
        .map((l) => l.status);
      expect(statuses.length, why).toBeGreaterThan(0);
      expect(
        statuses.filter((s) => s !== 200),
        why,
      ).toEqual([]);
    });

    it(`proof: ${agent} with the queue off (queueTimeoutMs: 0) gets 429s, gives up, and its session is over`, async () => {
      const r = await behindBusyKey(agent, { queueTimeoutMs: 0 }, holdMs);
      const why = describeRun(r);
      expect(r.run.exitCode, why).not.toBe(0);
      expect(r.disk.length, why).toBeGreaterThan(0);
      const statuses = r.logs
        .filter((l) => l.api === API[agent] && l.model !== HOLD_MODEL)
        .map((l) => l.status);
      expect(statuses.length, why).toBeGreaterThan(1);
      expect(
        statuses.filter((s) => s !== 429),
        why,
      ).toEqual([]);
    });
  }

  for (const agent of ['claude', 'qwen'] as const)
    it(`${agent}: with the queue off it retries the 429 and finishes`, async () => {
      const r = await behindBusyKey(agent, { queueTimeoutMs: 0 }, 3000);
      const why = describeRun(r);
      expect(r.run.exitCode, why).toBe(0);
      expect(r.text, why).toMatch(new RegExp(`\\b${CORE_TASK.final}\\b`, 'i'));
      const statuses = r.logs
        .filter((l) => l.api === API[agent] && l.model !== HOLD_MODEL)
        .map((l) => l.status);
      expect(statuses, why).toContain(429);
      expect(statuses.at(-1), why).toBe(200);
    });
});
