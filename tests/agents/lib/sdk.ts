/**
 * The two SDKs in the agent suite: each is a small program in tests/agents/sdk/, run through
 * `toolproof launch <sdk> -- node <program> [--stream] TASK` (the launcher sets the environment the
 * SDK reads), or straight to the backend with the same recipe pointed there.
 */
import { join } from 'node:path';
import type { AgentTarget } from './agents.js';
import { suitePlan } from './plan.js';

export type SdkId = 'openai-agents' | 'claude-agent-sdk';

/** The program each SDK runs. */
export const SDK_PROGRAMS: Record<SdkId, string> = {
  'openai-agents': join(import.meta.dirname, '..', 'sdk', 'openai-agents.mjs'),
  'claude-agent-sdk': join(import.meta.dirname, '..', 'sdk', 'claude-agent-sdk.mjs'),
};

export function isSdk(agent: string): agent is SdkId {
  return agent in SDK_PROGRAMS;
}

/** How a case runs an SDK program: which API (OpenAI Agents SDK), streamed or not, its own MCP tool (Claude Agent SDK). */
export interface SdkRun {
  api?: 'chat' | 'responses';
  stream?: boolean;
  mcp?: boolean;
}

/** The program's own arguments (after `node`). */
export function sdkProgramArgs(agent: SdkId, target: AgentTarget, task: string): string[] {
  const flags = [...(target.sdk?.stream ? ['--stream'] : []), ...(target.sdk?.mcp ? ['--mcp'] : [])];
  return [SDK_PROGRAMS[agent], ...flags, task];
}

/**
 * Test plumbing, not configuration: where the Claude Agent SDK is installed (the agents cache,
 * scripts/install-agents.mjs), as the program cannot import it by name from the clone.
 */
export function sdkEnv(agent: SdkId, bin: string): Record<string, string> {
  if (agent !== 'claude-agent-sdk') return {};
  // The launcher finds it there too (the run's HOME is not the one the cache is under).
  return { CLAUDE_AGENT_SDK_DIR: bin, TOOLPROOF_AGENTS_DIR: join(bin, '..', '..', '..') };
}

/** Straight to the backend: the launcher's recipe, pointed at the backend's origin. */
export function prepareSdkDirect(
  agent: SdkId,
  target: AgentTarget,
  task: string,
  env: Record<string, string>,
  dir: string,
  bin: string,
): { args: string[]; env: Record<string, string> } {
  const plan = suitePlan(agent, target, dir);
  return { args: sdkProgramArgs(agent, target, task), env: { ...env, ...sdkEnv(agent, bin), ...plan.env } };
}
