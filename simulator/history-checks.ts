/**
 * strictHistory checks, shared by both personalities. Neither real backend checks histories this
 * way (llama-server accepts all of these, see the recordings' README item 14); the option exists to
 * stand in for stricter templates and backends, so the messages are the simulator's own.
 */
import { isObject as isObj } from '../protocol/is-object.js';

type Obj = Record<string, unknown>;

/** The first problem: a call not followed by its result, or a result whose id matches no call; null when fine. */
export function strictHistoryProblem(messages: Obj[]): string | null {
  const pending = new Set<string>();
  const known = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'tool' && pending.size > 0) {
      return `Assistant tool call(s) ${[...pending].join(', ')} are not followed by their tool result message(s)`;
    }
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) {
        if (isObj(tc) && typeof tc.id === 'string') {
          pending.add(tc.id);
          known.add(tc.id);
        }
      }
    }
    if (m.role === 'tool') {
      const id = typeof m.tool_call_id === 'string' ? m.tool_call_id : '';
      if (!known.has(id))
        return `Tool message with tool_call_id '${id}' does not match any previous tool call`;
      pending.delete(id);
    }
  }
  if (pending.size > 0) {
    return `Assistant tool call(s) ${[...pending].join(', ')} are not followed by their tool result message(s)`;
  }
  return null;
}
