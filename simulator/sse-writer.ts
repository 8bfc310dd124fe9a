/** Writes a response as SSE with the scripted timing and failure behaviours. */
import { untilDrainOrClose } from '../server/drain.js';
import type { ServerResponse } from 'node:http';
import type { Behaviour } from './types.js';

export interface StreamState {
  chunksSent: number;
  /** Set when the socket closed early; the writer stops. */
  closed: boolean;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function sseEvent(payload: unknown): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;
}

/**
 * Sends the events one by one. A stall leaves the response open forever (the client or close()
 * ends it); a death destroys the socket so the client sees a truncated chunked body.
 */
export async function writeSse(
  res: ServerResponse,
  headers: Record<string, string>,
  events: string[],
  behaviour: Behaviour,
  state: StreamState,
  /** llama-server sends the role event and the first token in one HTTP chunk (recorded on the wire). */
  coalesceFirst = false,
): Promise<void> {
  res.writeHead(200, headers);
  res.flushHeaders();
  const limit = Math.min(behaviour.stallAfterChunks ?? Infinity, behaviour.dieAfterChunks ?? Infinity);
  for (let i = 0; i < events.length; i++) {
    if (state.closed) return;
    if (behaviour.stallAfterChunks !== undefined && i >= behaviour.stallAfterChunks) return;
    if (behaviour.dieAfterChunks !== undefined && i >= behaviour.dieAfterChunks) {
      res.socket?.destroy();
      return;
    }
    if (i > 0 && behaviour.chunkDelayMs) await sleep(behaviour.chunkDelayMs);
    if (state.closed) return;
    const joined = i === 0 && coalesceFirst && events.length > 2 && limit >= 2;
    const ok = res.write(joined ? `${events[0]}${events[1]}` : (events[i] as string));
    state.chunksSent += joined ? 2 : 1;
    if (joined) i++;
    // Respect backpressure: a slow client must not make the simulator buffer the whole stream.
    if (!ok) await untilDrainOrClose(res);
  }
  if (!state.closed) res.end();
}
