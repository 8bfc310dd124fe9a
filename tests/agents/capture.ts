/**
 * Records the requests each agent CLI really sends, as fixtures (tests/fixtures/agents/): every
 * request body that reaches toolproof's front door, in order. Not a test; run it by hand when a
 * pinned version changes:
 *
 *   npx tsx tests/agents/capture.ts [agent[:piApi] ...]
 *
 * The upstream is the suite's scripted model in clean mode, so the runs go past their first turn
 * where the front door accepts them.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AgentId,
  type AgentTarget,
  CODEX_FREEFORM,
  makeRunDirs,
  type PiApi,
  runAgent,
} from './lib/agents.js';
import { CLAUDE_NAMES, claudeNamesConfig, startAgentStack } from './lib/stack.js';
import { CORE_TASK, taskPrompt } from './lib/tasks.js';

/** Codex 0.171's catalog knows only the freeform apply_patch (`function` is an unknown variant). */
const CODEX_VARIANTS: Record<string, Partial<AgentTarget>> = {
  freeform: CODEX_FREEFORM,
};

const OUT = join(import.meta.dirname, '..', 'fixtures', 'agents');

async function capture(spec: string, bins: Record<AgentId, string>): Promise<void> {
  const [agent, variant] = spec.split(':') as [AgentId, string | undefined];
  const piApi = agent === 'pi' ? (variant as PiApi | undefined) : undefined;
  const codex = agent === 'codex' && variant ? CODEX_VARIANTS[variant] : undefined;
  const names = agent === 'claude' && variant === 'names' ? CLAUDE_NAMES : undefined;
  const dirs = makeRunDirs(agent);
  const stack = await startAgentStack({
    mode: 'clean',
    task: CORE_TASK,
    cwd: dirs.cwd,
    record: true,
    ...(names ? { fileFor: (url: string) => claudeNamesConfig(url) } : {}),
  });
  try {
    const run = await runAgent({
      bin: bins[agent],
      agent,
      target: {
        origin: stack.origin,
        model: stack.model,
        ...(piApi ? { piApi } : {}),
        ...codex,
        ...(names ? { claudeModels: names } : {}),
      },
      task: taskPrompt(CORE_TASK),
      dirs,
      files: CORE_TASK.files,
      timeoutMs: 90_000,
    });
    const dir = join(OUT, variant ? `${agent}-${variant}` : agent);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    stack.recorded.forEach((r, i) => {
      const name = `${String(i + 1).padStart(2, '0')}-${r.method}${r.path.replace(/[^a-z0-9]+/gi, '-')}.json`;
      writeFileSync(join(dir, name), `${JSON.stringify(r, null, 2)}\n`);
    });
    console.log(
      `${spec}: exit ${run.exitCode}, ${stack.recorded.length} requests, ${run.ms} ms\n  stdout: ${run.stdout.trim().slice(-300)}\n  stderr: ${run.stderr.trim().slice(-600)}`,
    );
  } finally {
    await stack.close();
  }
}

const info = JSON.parse(
  execFileSync(
    'node',
    [join(import.meta.dirname, '..', '..', 'scripts', 'install-agents.mjs'), '--json', '--check'],
    {
      encoding: 'utf8',
    },
  ),
) as { bins: Record<AgentId, string> };
const specs = process.argv.slice(2);
for (const spec of specs.length ? specs : ['claude', 'codex', 'opencode', 'qwen', 'pi'])
  await capture(spec, info.bins);
