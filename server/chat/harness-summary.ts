/**
 * The harness summary of a chat call: the log line's `harness` object (server/app.ts), which the
 * capture ring keeps as the record's summary (server/capture/recorder.ts finishCapture).
 */
import type { ChatCall } from './context.js';

/** The log line's `harness` object (also the capture's summary of the request). */
export function harnessOf(
  call: ChatCall,
  cache: { cached: number; prompt: number } | undefined,
): Record<string, unknown> {
  const t = call.trace;
  return {
    forced: t.forced,
    ...(t.toolChoiceSent ? { toolChoice: t.toolChoiceSent } : {}),
    fallback: t.fallback,
    attempts: t.attempts,
    repairs: t.repairs,
    leaks: t.leaks,
    retries: t.retries,
    normalizations: t.normalizations,
    constraints: t.constraints,
    finalAnswerProblems: t.finalAnswerProblems,
    validationFailures: t.validationFailures.map((v) => v.tool),
    ...(t.unenforced.length > 0 ? { unenforced: t.unenforced } : {}),
    ...(t.droppedTools ? { droppedTools: t.droppedTools } : {}),
    ...(t.schemaAnswer ? { schemaAnswer: t.schemaAnswer } : {}),
    ...(Object.keys(t.degraded).length > 0 ? { degraded: t.degraded } : {}),
    ...(cache ? { cachedTokens: cache.cached, promptTokens: cache.prompt } : {}),
    ...(call.discardedTokens > 0 ? { discardedTokens: call.discardedTokens } : {}),
    ...(t.key ? { key: t.key } : {}),
    ...(t.routeFallbacks ? { routeFallbacks: t.routeFallbacks } : {}),
    ...(t.servedBy ? { servedBy: t.servedBy } : {}),
    ...(t.priority ? { priority: t.priority } : {}),
    queuedMs: Math.round(t.queuedMs * 10) / 10,
    final: t.finalKind ?? null,
  };
}
