/**
 * The per-request harness trace: what toolproof did to one client request. It becomes the
 * `harness` object of the request's single log line and is turned into metrics once, at the end.
 */
import type { Usage } from '../../protocol/openai.js';
import type { PolicyEffect } from '../../policies/registry.js';

export type FinalKind = 'tool_calls' | 'final_answer' | 'content' | 'both' | 'error' | 'passthrough';

export interface HarnessTrace {
  forced: boolean;
  toolChoiceSent?: string;
  fallback: boolean;
  attempts: number;
  retries: Array<{ reason: string; outcome?: string }>;
  repairs: Record<string, number>;
  leaks: Array<{ format: string; source: string; outcome: string; backendHint?: string; reason?: string }>;
  normalizations: Record<string, number>;
  /** What client-constraints enforced (forbidden-call, dropped-parallel-call). */
  constraints: Record<string, number>;
  /** final_answer calls without an answer string (invalid: re-asked; raw: returned as JSON text). */
  finalAnswerProblems: Record<string, number>;
  validationFailures: Array<{ tool: string; detail?: unknown }>;
  /** Calls whose schema toolproof could not fully enforce (and why). */
  unenforced: Array<{ tool: string; reasons: string[] }>;
  finalKind?: FinalKind;
  /** The last judged attempt's answer came from the synthetic final-answer tool. */
  finalAnswer: boolean;
  /**
   * Of `n` choices asked one request each, one before the last was returned invalid after its
   * corrective retries (its last retry 'failed'): `retries` ends with the last choice's.
   */
  choiceReturnedInvalid?: boolean;
  effects: PolicyEffect[];
  /** Content degraded before it went upstream, by kind (document-text, document-cut, document-note, image-note, audio-note, tool-result-cut). */
  degraded: Record<string, number>;
  /** The upstream's stream (or whole body) was cut before any of the answer reached the client: sent again once. */
  resentAfterCut?: boolean;
  /** What the upstream refused of the request, sent again rewritten (Policy.refusal's decisions). */
  refused?: string[];
  /** Hosted tools the front door left out of the upstream request (their types). */
  droppedTools?: string[];
  /** The answer the client asked in a JSON schema: how it checked (the last one delivered). */
  schemaAnswer?: string;
  /** The request's priority class (server/priority.ts). */
  priority?: string;
  /** The name of the client key the request presented (server/keys.ts). */
  key?: string;
  /** Routes taken instead of the one asked for: fallbacks before the first byte, the long-context route. */
  routeFallbacks?: Array<{ from: string; to: string; reason: string }>;
  /** The model that answered when a route fallback or the long-context route moved the request. */
  servedBy?: string;
  /** Time spent waiting in the upstream replica's admission queue, over every attempt (ms). */
  queuedMs: number;
}

export function newTrace(): HarnessTrace {
  return {
    forced: false,
    fallback: false,
    finalAnswer: false,
    attempts: 0,
    retries: [],
    repairs: {},
    leaks: [],
    normalizations: {},
    constraints: {},
    finalAnswerProblems: {},
    validationFailures: [],
    unenforced: [],
    degraded: {},
    effects: [],
    queuedMs: 0,
  };
}

export function addUsage(total: Usage | undefined, more: Usage | null | undefined): Usage | undefined {
  if (!more || typeof more !== 'object') return total;
  if (!total) return { ...more };
  const sum: Usage = {
    ...total,
    prompt_tokens: (total.prompt_tokens ?? 0) + (more.prompt_tokens ?? 0),
    completion_tokens: (total.completion_tokens ?? 0) + (more.completion_tokens ?? 0),
    total_tokens: (total.total_tokens ?? 0) + (more.total_tokens ?? 0),
  };
  // Cached prompt tokens add up too, or a retried request would report the first attempt's only.
  const a = (total.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)?.cached_tokens;
  const b = (more.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)?.cached_tokens;
  if (typeof a === 'number' && typeof b === 'number')
    sum.prompt_tokens_details = { ...(total.prompt_tokens_details as object), cached_tokens: a + b };
  return sum;
}

/** What a client received, as one response kind (metrics and the log line). */
export function classifyFinal(seen: { calls: boolean; content: boolean }, finalAnswer: boolean): FinalKind {
  if (seen.calls && seen.content) return 'both';
  if (seen.calls) return 'tool_calls';
  return finalAnswer ? 'final_answer' : 'content';
}
