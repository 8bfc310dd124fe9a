/**
 * The harness summary of a chat call: the log line's `harness` object (server/app.ts), which the
 * capture ring keeps as the record's summary (server/capture/recorder.ts finishCapture).
 */
import type { ChatCall } from './context.js';

/**
 * The log line's `harness` object (also the capture's summary of the request). One object
 * literal, a field absent from the summary undefined in it (JSON, the log line's and the
 * inspector's, leaves it out: the same text, in the same order, as when it was left out of the
 * object): each spread of an optional field cost a temporary object and a copy (~3 µs a request,
 * paid for the log line and, at log levels above info, for the capture alone).
 */
export function harnessOf(
  call: Pick<ChatCall, 'trace' | 'discardedTokens'>,
  cache: { cached: number; prompt: number } | undefined,
): Record<string, unknown> {
  const t = call.trace;
  return {
    forced: t.forced,
    toolChoice: t.toolChoiceSent ? t.toolChoiceSent : undefined,
    fallback: t.fallback,
    attempts: t.attempts,
    repairs: t.repairs,
    leaks: t.leaks,
    retries: t.retries,
    normalizations: t.normalizations,
    constraints: t.constraints,
    finalAnswerProblems: t.finalAnswerProblems,
    validationFailures: t.validationFailures.length > 0 ? t.validationFailures.map((v) => v.tool) : [],
    unenforced: t.unenforced.length > 0 ? t.unenforced : undefined,
    droppedTools: t.droppedTools ? t.droppedTools : undefined,
    schemaAnswer: t.schemaAnswer ? t.schemaAnswer : undefined,
    degraded: hasKeys(t.degraded) ? t.degraded : undefined,
    refused: t.refused ? t.refused : undefined,
    resentAfterCut: t.resentAfterCut ? true : undefined,
    cachedTokens: cache ? cache.cached : undefined,
    promptTokens: cache ? cache.prompt : undefined,
    discardedTokens: call.discardedTokens > 0 ? call.discardedTokens : undefined,
    key: t.key ? t.key : undefined,
    routeFallbacks: t.routeFallbacks ? t.routeFallbacks : undefined,
    servedBy: t.servedBy ? t.servedBy : undefined,
    priority: t.priority ? t.priority : undefined,
    queuedMs: Math.round(t.queuedMs * 10) / 10,
    final: t.finalKind ?? null,
  };
}

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}
