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

/**
 * Types named in the header and the log line; more are counted (`, +N more`). A type is at most
 * ~40 characters, so the header stays under 1 KB, far below what clients and proxies accept
 * (undici's fetch: 16 KiB for all headers; nginx's proxy buffer: 4-8 KiB). 4,000 dated server
 * tools made an 84 KB header that a default fetch refused (UND_ERR_HEADERS_OVERFLOW).
 */
export const DROPPED_TOOLS_LISTED = 16;

/** The distinct types, the first DROPPED_TOOLS_LISTED of them named. */
function listed(types: readonly string[]): string[] {
  if (types.length <= DROPPED_TOOLS_LISTED) return [...types];
  return [...types.slice(0, DROPPED_TOOLS_LISTED), `+${types.length - DROPPED_TOOLS_LISTED} more`];
}

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
  const types = listed([...new Set(dropped)]);
  call.trace.droppedTools = types;
  const value = types.join(', ');
  reply.header(DROPPED_TOOLS_HEADER, value);
  for (const type of dropped)
    state.metrics.droppedTools.labels(call.route.name, call.api, toolFamily(type)).inc();
  return { [DROPPED_TOOLS_HEADER]: value };
}
