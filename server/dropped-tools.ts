/**
 * Hosted tools a front door left out of the upstream request (hostedTools: drop): the client is
 * told by a response header, the log line's `harness.droppedTools`, and
 * toolproof_dropped_tools_total. The types come from closed lists in protocol/ (a client cannot
 * mint label values): the metric's `tool` label is the type without its version date.
 */
import type { FastifyReply } from 'fastify';
import type { AppState } from './app-state.js';
import type { ChatCall } from './chat/context.js';

const DROPPED_TOOLS_HEADER = 'x-toolproof-dropped-tools';

function toolFamily(type: string): string {
  return type.replace(/_\d{8}$/, '');
}

/**
 * Records the dropped tools; returns the header for a stream to write itself (a hijacked reply
 * sends none of Fastify's headers).
 */
export function reportDroppedTools(
  reply: FastifyReply,
  state: AppState,
  call: ChatCall,
  dropped: readonly string[],
): Record<string, string> {
  if (dropped.length === 0) return {};
  const types = [...new Set(dropped)];
  call.trace.droppedTools = types;
  const value = types.join(', ');
  reply.header(DROPPED_TOOLS_HEADER, value);
  for (const type of dropped)
    state.metrics.droppedTools.labels(call.route.name, call.api, toolFamily(type)).inc();
  return { [DROPPED_TOOLS_HEADER]: value };
}
