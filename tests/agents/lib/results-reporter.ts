/**
 * Records what each agent case of the last run gave (agent × API × task × mode × direct / through
 * toolproof: passed or failed, and how long) in tests/agents/results.json, which
 * scripts/agents-table.mjs turns into the README's harness-effect table. Cases come from the tests'
 * `meta.agentCase` (set by agentCases in suite.ts); a run of one file updates that file's entries
 * and keeps the others, so the JSON is the last run of every case. TOOLPROOF_AGENTS_RESULTS names
 * another file; `off` records nothing.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export interface AgentCaseMeta {
  agent: string;
  /** The agent's name and pinned version, as the suite names it. */
  label: string;
  api: string;
  task: string;
  mode: string;
  via: 'toolproof' | 'direct';
  /** A real-content case (issue 26): what it carries ("PDF", "image, vision"); the table's own column. */
  content?: string;
}

declare module 'vitest' {
  interface TaskMeta {
    agentCase?: AgentCaseMeta;
  }
}

export interface AgentCaseResult extends AgentCaseMeta {
  /** Through toolproof: the task was done. Direct: the result the suite expects (a leak or prose failure for those modes). */
  state: 'passed' | 'failed' | 'skipped';
  ms: number;
  at: string;
}

const KEY = (c: AgentCaseMeta) => [c.agent, c.api, c.task, c.mode, c.via].join('|');

export default class AgentResultsReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const target =
      process.env.TOOLPROOF_AGENTS_RESULTS ?? join(process.cwd(), 'tests', 'agents', 'results.json');
    if (target === 'off') return;
    const at = new Date().toISOString();
    const fresh: AgentCaseResult[] = [];
    for (const mod of modules) {
      for (const test of mod.children.allTests()) {
        const meta = test.meta().agentCase;
        if (!meta) continue;
        const state = test.result().state;
        if (state === 'pending') continue;
        fresh.push({ ...meta, state, ms: Math.round(test.diagnostic()?.duration ?? 0), at });
      }
    }
    if (fresh.length === 0) return;
    const old: AgentCaseResult[] = existsSync(target)
      ? (JSON.parse(readFileSync(target, 'utf8')) as { cases: AgentCaseResult[] }).cases
      : [];
    const byKey = new Map(old.map((c) => [KEY(c), c]));
    for (const c of fresh) byKey.set(KEY(c), c);
    const cases = [...byKey.values()].sort((a, b) => KEY(a).localeCompare(KEY(b)));
    writeFileSync(target, `${JSON.stringify({ cases }, null, 1)}\n`);
  }
}
