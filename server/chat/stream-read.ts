/**
 * Reading an upstream event stream, for both stream readers (stream-driver.ts, stream-relay.ts):
 * the read loop with backpressure, the idle clock, one event's JSON, and the faults a stream can
 * show. What a reader does with the events is its own.
 *
 * Hazards: an upstream read can fail at any time (undici error: an upstream fault), while a
 * throw from a policy hook is toolproof's own bug (TP_ERR_INTERNAL): the two are kept apart.
 * A response body that is abandoned is destroyed (discardBody), which cancels the upstream
 * request; the body has no events, so a late socket error cannot become an uncaught exception.
 */
import { performance } from 'node:perf_hooks';
import {
  askedChoices,
  chunkShapeProblem,
  type OpenedCalls,
  upstreamJsonProblem,
} from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { captureFirstChunk } from '../capture/recorder.js';
import { toCutError, type UpstreamResponse } from '../upstream.js';
import { discardBody } from './attempt.js';
import type { ChatCall } from './context.js';

/** onRead's answer when the read loop ends. */
export const STOP = Symbol('stop');

/**
 * One read's work, synchronous: STOP ends the loop; a promise is a write the client's socket
 * must drain first (backpressure); undefined reads on at once (no microtask hop per read).
 */
export type OnRead = (buf: Buffer | undefined) => Promise<unknown> | typeof STOP | undefined;

/**
 * The rest of a body whose `[DONE]` was read: reading stops there (an upstream that kept its
 * connection open after it, silent or sending on, held the client's whole answer until the
 * idle timeout made it an error). The rest is read and dropped in the background, so the
 * connection stays reusable (its end nearly always follows the [DONE] at once); an upstream
 * that goes on past 64 KB or 1 s is cancelled instead.
 */
export function dropAfterDone(res: UpstreamResponse): void {
  void res.body.dump(64 * 1024, 1_000);
}

/** An event as the upstream sent it: a chunk, or an error event. */
type UpstreamEvent = ChatCompletionChunk & { error?: unknown };

/**
 * Pulls the body read by read until `onRead` stops (`undefined` is the end of the body).
 * Returns the read failure that ended it, if one did; a read failing after the client left
 * is thrown (it is an abort, not a fault).
 */
export async function pumpBody(
  call: ChatCall,
  res: UpstreamResponse,
  onRead: OnRead,
): Promise<ToolproofError | undefined> {
  const it = res.body[Symbol.asyncIterator]();
  let failure: ToolproofError | undefined;
  // Each read is awaited and handled inside its own call, so the loop's suspended frame holds
  // no register of an earlier read while it waits for the next one: the async loop keeps nothing
  // of a read (its bytes, its decoded text, its payloads) across the wait for the next one,
  // which an open stream would otherwise hold for as long as the upstream stays silent.
  const step = async (): Promise<boolean> => {
    let buf: Buffer | undefined;
    try {
      const read = await it.next();
      buf = read.done ? undefined : (read.value as Buffer);
    } catch (err) {
      if (call.signal.aborted) throw err;
      failure = midStreamError(call, err);
      return true;
    }
    const next = onRead(buf);
    if (next === STOP) return true;
    return next !== undefined && (await next) === STOP;
  };
  while (!(await step()));
  return failure;
}

/**
 * Bytes that hold no event (SSE comments, blank lines) do not count as progress: the clock
 * starts at the first such read after an event (no clock read per ordinary read).
 */
export class QuietClock {
  private since = -1;

  constructor(private readonly idleMs: number) {}

  /** A read with `events` events: false once only non-events came for longer than idleMs. */
  tick(events: number): boolean {
    if (events > 0) this.since = -1;
    else if (this.since < 0) this.since = performance.now();
    else if (performance.now() - this.since > this.idleMs) return false;
    return true;
  }
}

/**
 * How many events a stream may carry for the `max_tokens` it was sent with (the smaller of
 * `max_tokens` and `max_completion_tokens`), times its `n` choices: an event is one token of a
 * choice or more (vLLM, llama-server, SGLang write one per token, or fewer), so twice that, and
 * 64 for the role, finish, usage and [DONE] events. A choice's tokens are at most the model's
 * `window` when it is known (the YAML's contextWindow or the backend's, server/context-window.ts):
 * prompt and answer share it (vLLM refuses a max_tokens past it and, without one, stops where it
 * fills; llama-server stops a slot whose context is full), so a request with no max_tokens, or
 * one of a billion, is bounded by it too. With neither, no bound (the size bound holds). An
 * upstream that writes on past it ignores its max_tokens (a broken backend, a model looping under
 * ignore_eos): the size bound alone stopped it after 64 MiB, millions of tokens, hours of a GPU's
 * time at a model's pace, all of it for a client that asked for far less.
 */
export function eventAllowance(
  request: {
    max_tokens?: unknown;
    max_completion_tokens?: unknown;
    n?: unknown;
  },
  window?: number,
): {
  events: number;
  maxTokens: number;
  /** Set when the window, not max_tokens, bounds a choice. */
  window?: number;
} {
  const limits = [request.max_tokens, request.max_completion_tokens].filter(
    (v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0,
  );
  const asked = limits.length > 0 ? Math.ceil(Math.min(...limits)) : Number.POSITIVE_INFINITY;
  const known = window !== undefined && Number.isSafeInteger(window) && window > 0 ? window : undefined;
  if (known === undefined && limits.length === 0)
    return { events: Number.POSITIVE_INFINITY, maxTokens: Number.NaN };
  const byWindow = known !== undefined && known < asked;
  const maxTokens = byWindow ? known : asked;
  const n = askedChoices(request.n);
  return { events: 2 * maxTokens * n + 64, maxTokens, ...(byWindow ? { window: known } : {}) };
}

/** A stream past its eventAllowance: the upstream does not stop where it was asked to. */
export function pastMaxTokens(
  label: string,
  allowance: { events: number; maxTokens: number; window?: number },
): ToolproofError {
  const bound =
    allowance.window !== undefined
      ? `the model's ${allowance.window}-token context window`
      : `max_tokens ${allowance.maxTokens}`;
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent more than ${allowance.events} events for ${bound}: it did not stop where it was asked to.`,
  });
}

/** The response is an event stream; if not, it is abandoned and the fault returned. */
export function notEventStream(call: ChatCall, res: UpstreamResponse): ToolproofError | undefined {
  const contentType = String(res.headers['content-type'] ?? '');
  // A media type is case-insensitive (RFC 9110 §8.3.1): `Text/Event-Stream` is one too.
  if (contentType.toLowerCase().includes('text/event-stream')) return undefined;
  discardBody(res);
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${call.route.client.label} answered a streaming request with ${contentType || 'no content type'}, not an event stream.`,
  });
}

/** One event's payload as JSON, or the fault it is. `calls`: see chunkShapeProblem. */
export function parseEvent(
  payload: string,
  label: string,
  calls?: OpenedCalls,
): UpstreamEvent | ToolproofError {
  // Scanned before the parse (a long event only): JSON.parse pays for nesting and distinct keys.
  const hazard = upstreamJsonProblem(payload);
  if (hazard) return badStream(label, `an event with ${hazard}`);
  let chunk: UpstreamEvent;
  try {
    chunk = JSON.parse(payload) as UpstreamEvent;
  } catch (err) {
    return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream ${label} sent an event that is not JSON.`,
      cause: err,
    });
  }
  // An array is no chunk either: every reader reads its fields (`[]` as the first event threw).
  if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) {
    return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream ${label} sent an event that is not a JSON object.`,
    });
  }
  const problem = chunkShapeProblem(chunk, calls, payload.length);
  if (problem) return badStream(label, `an event with ${problem}`);
  return chunk;
}

export function badStream(label: string, what: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent ${what}.`,
  });
}

/**
 * An error event: an `error` and no choices (llama-server and vLLM send them mid-stream).
 * `"error": null` says there is none.
 */
export function isErrorEvent(chunk: UpstreamEvent): boolean {
  return chunk.error !== undefined && chunk.error !== null && !Array.isArray(chunk.choices);
}

/** A usage-only event: summed over attempts, one goes out at the very end. */
export function isUsageEvent(chunk: UpstreamEvent): boolean {
  return !!chunk.usage && (!Array.isArray(chunk.choices) || chunk.choices.length === 0);
}

/**
 * An attempt's stream gave its first bytes: its time to first chunk, on the attempt's span and
 * in its capture record (both drivers call it once, on their first read).
 */
export function firstChunkRead(call: ChatCall): void {
  call.span?.firstChunk();
  if (call.capture) captureFirstChunk(call);
}

/** Every chunk repeats the same identity: a new object only when it changes. */
export function noteIdentity(call: ChatCall, chunk: ChatCompletionChunk): void {
  const prev = call.streamIdentity;
  const model = chunk.model ?? prev.model;
  const created = chunk.created ?? prev.created;
  if (prev.id !== chunk.id || prev.model !== model || prev.created !== created)
    call.streamIdentity = { id: chunk.id, model, created };
}

export function midStreamError(call: ChatCall, err: unknown): ToolproofError {
  const mapped = toCutError(err, call.route.client.label, 'the stream');
  if (mapped instanceof ToolproofError) return mapped;
  return new ToolproofError('TP_ERR_UPSTREAM_CUT_OFF', {
    message: `The upstream ${call.route.client.label} closed the stream before it ended.`,
    cause: err,
  });
}

export function stalled(label: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
    message: `The upstream ${label} stalled: no event within the idle timeout (only comments or blank lines).`,
  });
}

/**
 * A choice's finish_reason set, however the JSON is spaced (Python's json.dumps writes `": "`):
 * with [DONE], what says a stream's answer is whole. The relays look for it until found once.
 */
export const FINISH_SET = /"finish_reason"\s*:\s*"/;

/** A stream that ended with neither [DONE] nor a finish_reason: cut off, not a whole answer. */
export function cutOff(label: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_CUT_OFF', {
    message: `The upstream ${label} closed the stream before the answer finished (no finish_reason, no end-of-stream marker).`,
  });
}
