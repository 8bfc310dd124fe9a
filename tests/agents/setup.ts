/**
 * Global setup of the agent suite: finds the pinned CLIs (scripts/install-agents.mjs). In CI it
 * installs them when the cache is empty and fails when it cannot; elsewhere it only looks, and the
 * suite skips loudly when they are absent.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import type { AgentsInfo } from './lib/case.js';

export default function setup(project: TestProject): void {
  const ci = Boolean(process.env.CI);
  const script = join(import.meta.dirname, '..', '..', 'scripts', 'install-agents.mjs');
  const run = spawnSync(process.execPath, [script, '--json', ...(ci ? [] : ['--check'])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 900_000,
  });
  let info: AgentsInfo;
  if (run.status === 0) {
    info = JSON.parse(run.stdout) as AgentsInfo;
  } else {
    const why = `the pinned agent CLIs are not installed (run \`node scripts/install-agents.mjs\`): install-agents exited ${run.status ?? run.signal}`;
    if (ci) throw new Error(`agents suite: ${why}`);
    info = { missing: why };
    process.stderr.write(`\n*** AGENTS SUITE SKIPPED: ${why} ***\n\n`);
  }
  project.provide('agents', info);
}
