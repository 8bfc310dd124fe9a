/**
 * A request's priority class (admission.ts), from what it says about itself:
 * 1. the `x-toolproof-priority` header (high, normal, low, background), capped by its key's
 *    `priority`: a key cannot claim more than it was given;
 * 2. otherwise the lowest of: the key's `priority`, the model route's `priority` (a side model is
 *    low), and the agent signals below; `normal` when nothing says otherwise.
 *
 * Agent signals (docs/operations.md):
 * - Claude Code marks a sub-agent's requests (its Agent tool) with `x-claude-code-agent-id` /
 *   `x-claude-code-parent-agent-id` (the main loop sends neither): `low`;
 * - Claude Code's background work says `x-app: cli-bg`, and its side requests (titles, summaries,
 *   quota checks) go to its small/fast model, a `*haiku*` name unless mapped: `background`;
 * - Codex marks its sub-agents (review, compact, ...) with `x-openai-subagent`: `low`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { PRIORITY_CLASSES, PRIORITY_RANK, type PriorityClass } from './admission.js';

export const PRIORITY_HEADER = 'x-toolproof-priority';

export function isPriorityClass(value: unknown): value is PriorityClass {
  return typeof value === 'string' && (PRIORITY_CLASSES as readonly string[]).includes(value);
}

/** The lower-ranked (less urgent) of two classes. */
function lower(a: PriorityClass, b: PriorityClass): PriorityClass {
  return PRIORITY_RANK[a] >= PRIORITY_RANK[b] ? a : b;
}

/** What an agent's own headers and model name say about a request (undefined: nothing). */
export function agentSignal(headers: IncomingHttpHeaders, model: string): PriorityClass | undefined {
  if (headers['x-app'] === 'cli-bg') return 'background';
  if (/haiku/i.test(model)) return 'background';
  if (
    headers['x-claude-code-parent-agent-id'] !== undefined ||
    headers['x-claude-code-agent-id'] !== undefined ||
    headers['x-openai-subagent'] !== undefined
  )
    return 'low';
  return undefined;
}

export interface PrioritySources {
  headers: IncomingHttpHeaders;
  /** The model name the client asked for. */
  model: string;
  /** The model route's class (YAML `priority`). */
  route?: PriorityClass;
  /** The key's class: its requests' default, and the most it may ask for by header. */
  key?: PriorityClass;
}

export function priorityOf(s: PrioritySources): PriorityClass {
  const asked = s.headers[PRIORITY_HEADER];
  const value = typeof asked === 'string' ? asked.trim().toLowerCase() : undefined;
  if (isPriorityClass(value)) {
    return s.key === undefined ? value : lower(value, s.key);
  }
  let cls: PriorityClass = s.key ?? 'normal';
  if (s.route !== undefined) cls = lower(cls, s.route);
  const signal = agentSignal(s.headers, s.model);
  if (signal !== undefined) cls = lower(cls, signal);
  return cls;
}
