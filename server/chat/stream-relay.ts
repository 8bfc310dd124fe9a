/**
 * The streamed pass-through (chat without tools, or recovery off): nothing to fix, so the
 * upstream's events are relayed, byte for byte where a read holds whole, ordinary events only.
 * Error events are normalized to the API's error, and usage events summed into the one usage
 * chunk at the end. No policy runs and nothing is held.
 */
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, Usage } from '../../protocol/openai.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { SseParser } from '../sse.js';
import { discardBody } from './attempt.js';
import type { AttemptReport, OpenedResponse } from './attempt-end.js';
import type { ChatCall, ChatDeps } from './context.js';
import type { StreamOutput } from './output.js';
import {
  isErrorEvent,
  isUsageEvent,
  midStreamError,
  noteIdentity,
  pumpBody,
  QuietClock,
  STOP,
  stalled,
  parseEvent,
} from './stream-read.js';
import { addUsage } from './trace.js';

/** A read whose events need no rewriting: no error event (those are normalized). */
function isPlainRelay(payloads: readonly string[]): boolean {
  for (const p of payloads) if (p.startsWith('{"error"') || p.startsWith('{ "error"')) return false;
  return true;
}

function usageOfChunk(payload: string): Usage | undefined {
  try {
    const u = (JSON.parse(payload) as { usage?: Usage | null }).usage;
    return u && typeof u === 'object' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** Relays one upstream stream to `out` (already open). */
export function relayStream(
  call: ChatCall,
  deps: ChatDeps,
  opened: OpenedResponse,
  out: StreamOutput,
): Promise<AttemptReport> {
  const res = opened.res;
  const label = call.route.client.label;
  const relay = out.relay ? out.relay.bind(out) : null;
  const parser = new SseParser();
  const quiet = new QuietClock(call.route.client.idleMs);
  // Diagnosis (rawDumpDir): the attempt's upstream events as received.
  const raw: string[] | undefined = deps.dumpRaw ? [] : undefined;
  let failure: ToolproofError | undefined;
  let usage: Usage | undefined;
  // Only a usage event is kept of the bytes relayed as they are: any other payload is a slice
  // that would pin its whole read for as long as the stream stays open.
  let lastUsagePayload = '';
  // What one read produced when it could not go as it came: one ordered text batch when the
  // output relays bytes, chunks otherwise.
  let text = '';
  let chunks: ChatCompletionChunk[] = [];

  const handle = (payload: string): void => {
    raw?.push(payload);
    if (failure || payload === '[DONE]') return;
    if (relay && !payload.includes('"error"') && !payload.includes('"usage"')) {
      text += `data: ${payload}\n\n`; // an ordinary event as its own text, only re-framed
      return;
    }
    const chunk = parseEvent(payload, label);
    if (chunk instanceof ToolproofError) {
      failure = chunk;
      return;
    }
    if (isErrorEvent(chunk)) {
      failure = fromUpstreamError(500, parseUpstreamBody(payload), label);
      return;
    }
    if (typeof chunk.id === 'string') noteIdentity(call, chunk);
    if (isUsageEvent(chunk)) {
      usage = addUsage(usage, chunk.usage);
      return;
    }
    if (relay) text += `data: ${JSON.stringify(chunk)}\n\n`;
    else chunks.push(chunk);
  };

  const flush = async (): Promise<void> => {
    if (text && relay) {
      const t = text;
      text = '';
      await relay(Buffer.from(t), false);
    }
    if (chunks.length === 0) return;
    const c = chunks;
    chunks = [];
    await out.chunks(c);
  };
  const flushThenStop = async (): Promise<typeof STOP> => {
    await flush();
    return STOP;
  };

  // Not async: an open stream waits in the read loop's frame only (see SseDriver.read).
  const onRead = (buf: Buffer | undefined): Promise<unknown> | typeof STOP | undefined => {
    const startsClean = !parser.pending();
    let payloads: string[];
    try {
      payloads = buf === undefined ? parser.finish() : parser.push(buf);
    } catch (err) {
      // SseEventTooLargeError (a ToolproofError, 502): an event past the framer's bound.
      failure = midStreamError(call, err);
      return STOP;
    }
    if (buf === undefined) {
      for (const payload of payloads) handle(payload);
      return flushThenStop();
    }
    if (!quiet.tick(payloads.length)) {
      failure = stalled(label);
      return STOP;
    }
    if (relay && startsClean && !parser.pending() && isPlainRelay(payloads)) {
      // The fast path: this read holds whole events only and none needs toolproof, so the
      // upstream's own bytes go to the client as they are (its [DONE] included).
      let done = false;
      for (const p of payloads) {
        raw?.push(p);
        if (p === '[DONE]') done = true;
        else lastUsagePayload = p.includes('"usage"') ? p : '';
      }
      return relay(buf, done);
    }
    for (const payload of payloads) handle(payload);
    return failure ? flushThenStop() : text || chunks.length > 0 ? flush() : undefined;
  };
  return pumpBody(call, res, onRead).then((readFailure): AttemptReport => {
    failure ??= readFailure;
    if (raw) deps.dumpRaw?.(call.reqId, call.trace.attempts, raw.map((p) => `data: ${p}\n\n`).join(''));
    if (failure) {
      discardBody(res);
      return { kind: 'failed', error: failure, midStream: true };
    }
    // Relayed raw, the usage chunk went to the client as it was: read it once for the log line.
    const relayedUsage = usage ?? (lastUsagePayload !== '' ? usageOfChunk(lastUsagePayload) : undefined);
    return { kind: 'relayed', ...(relayedUsage ? { usage: relayedUsage } : {}) };
  });
}
