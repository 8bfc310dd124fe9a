/**
 * The streamed pass-through (chat without tools, or recovery off): nothing to fix, so the
 * upstream's events are relayed, byte for byte where a read holds whole, ordinary events only.
 * Error events are normalized to the API's error. No policy runs and nothing is held, but for one
 * case: a stream toolproof asked usage for though the client did not (its key counts tokens:
 * PolicyContext.streamUsage). The upstream's usage chunk is then read and dropped, and the client
 * gets what the upstream sends unasked. llama-server moves its finish chunk's `timings` onto the
 * usage chunk when usage is asked: the finish chunk is held until the next event and gets them
 * back, as the upstream's own bytes. llama-server reports the tokens in those timings unasked:
 * they count when no usage came.
 */
import { upstreamJsonProblem } from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, Usage } from '../../protocol/openai.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { SseParser } from '../sse.js';
import { SseDoneScan } from '../sse-done.js';
import { discardBody } from './attempt.js';
import type { AttemptReport, OpenedResponse } from './attempt-end.js';
import type { ChatCall, ChatDeps } from './context.js';
import type { StreamOutput } from './output.js';
import {
  cutOff,
  dropAfterDone,
  eventAllowance,
  FINISH_SET,
  firstChunkRead,
  isErrorEvent,
  isUsageEvent,
  midStreamError,
  noteIdentity,
  pumpBody,
  QuietClock,
  STOP,
  stalled,
  parseEvent,
  pastMaxTokens,
} from './stream-read.js';
import { noteTimings, tokenCount } from './prompt-cache.js';
import { addUsage } from './trace.js';
import { captureAttemptEnd, captureRead } from '../capture/recorder.js';
import { windowOf } from '../context-window.js';

/**
 * One read, fed to the parser in up to three parts, so that whole events are relayed as the
 * upstream's bytes even when a read does not begin or end on an event boundary (a burst of
 * events arrives in reads cut anywhere): `before`, the payloads that complete an event begun in
 * an earlier read (up to the read's first blank line: they are framed again, as that event's
 * first bytes went to no client); `whole`, the bytes from there on, up to the read's last blank
 * line or to its end, with their payloads, when the parser agrees that both ends are event
 * boundaries; `after`, the payloads of the bytes past `whole`, which begin an event the next read
 * completes (none, but for streams that end events with other line endings than "\n\n").
 * Every byte is fed to the parser once and in order (cutting a read changes none of its
 * payloads: tests/server/sse.test.ts), and every byte the client is not sent as it came is
 * framed again from its payloads, as a read that is not whole always was.
 */
interface RelayRead {
  before: string[];
  whole: { bytes: Buffer; payloads: string[] } | null;
  after: string[];
}

const BLANK_LINE = Buffer.from('\n\n');
const NO_PAYLOADS: readonly string[] = Object.freeze([]);

const framedAgain = (payloads: string[]): RelayRead => ({
  before: payloads,
  whole: null,
  after: NO_PAYLOADS as string[],
});

/** `into` with `more` appended (either may be returned; NO_PAYLOADS is never written to). */
function joined(into: string[], more: string[]): string[] {
  if (more.length === 0) return into;
  if (into.length === 0) return more;
  for (const m of more) into.push(m);
  return into;
}

function splitRead(parser: SseParser, buf: Buffer): RelayRead {
  let from = 0;
  let before = NO_PAYLOADS as string[];
  if (parser.pending()) {
    const first = buf.indexOf(BLANK_LINE);
    if (first === -1) return framedAgain(parser.push(buf));
    from = first + 2;
    before = parser.push(buf.subarray(0, from));
    if (parser.pending()) return framedAgain(joined(before, parser.push(buf.subarray(from))));
    if (from === buf.length) return framedAgain(before);
  }
  // The parser is at an event boundary at `from`.
  const last = buf.lastIndexOf(BLANK_LINE);
  const to = Math.max(last + 2, from);
  const head = to > from ? parser.push(buf.subarray(from, to)) : (NO_PAYLOADS as string[]);
  if (parser.pending()) return framedAgain(joined(joined(before, head), parser.push(buf.subarray(to))));
  const view = (end: number) => (from === 0 && end === buf.length ? buf : buf.subarray(from, end));
  if (to === buf.length)
    return { before, whole: { bytes: view(to), payloads: head }, after: NO_PAYLOADS as string[] };
  const tail = parser.push(buf.subarray(to));
  if (!parser.pending())
    return {
      before,
      whole: { bytes: view(buf.length), payloads: joined(head, tail) },
      after: NO_PAYLOADS as string[],
    };
  if (to === from) return framedAgain(joined(before, tail));
  return { before, whole: { bytes: view(to), payloads: head }, after: tail };
}

/** Bytes that begin at an event boundary, up to the end of their [DONE] event. */
function untilDoneIn(bytes: Buffer): Buffer {
  const end = new SseDoneScan().push(bytes);
  return end > 0 ? bytes.subarray(0, end) : bytes;
}

/** A finish chunk (a choice's `finish_reason` set): the chunk llama-server's timings end. */
const FINISHED = '"finish_reason":"';

/**
 * A read whose events need no rewriting: no error event (those are normalized) and, when the
 * usage chunk is dropped, neither it nor a finish chunk (held for its timings). An event is
 * looked at as `handle` looks at it (any `"error"` in it, not only as its first key): an error
 * event `{"id":…,"error":{…}}` read whole went to the client as the upstream wrote it and the
 * request counted as clean, and the same bytes cut across two reads were toolproof's error.
 */
function isPlainRelay(payloads: readonly string[], dropUsage: boolean): boolean {
  for (const p of payloads) {
    if (p.includes('"error"')) return false;
    if (dropUsage && (p.includes('"usage"') || p.includes(FINISHED))) return false;
  }
  return true;
}

/**
 * The raw text of the `timings` member that ends `payload` (llama-server writes it last), or
 * undefined when it is not there or not an object: spliced back as the upstream wrote it.
 */
function trailingTimings(payload: string): string | undefined {
  const at = payload.lastIndexOf(',"timings":');
  if (at < 0 || !payload.endsWith('}}')) return undefined;
  const text = payload.slice(at + 11, -1);
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * llama-server's timings as usage (cache_n + prompt_n prompt tokens, predicted_n completion).
 * The payload was relayed unparsed: past the upstream JSON bounds it is not parsed now either
 * (one event nested 7M levels held the loop ~7 s when the stream ended).
 */
function usageOfTimings(payload: string): { usage: Usage; timings: unknown } | undefined {
  if (upstreamJsonProblem(payload)) return undefined;
  let timings: unknown;
  try {
    timings = (JSON.parse(payload) as { timings?: unknown }).timings;
  } catch {
    return undefined;
  }
  if (!timings || typeof timings !== 'object') return undefined;
  const { cache_n, prompt_n, predicted_n } = timings as Record<string, unknown>;
  if (typeof prompt_n !== 'number' || typeof predicted_n !== 'number') return undefined;
  const prompt = tokenCount(prompt_n) + tokenCount(cache_n);
  const completion = tokenCount(predicted_n);
  return {
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    timings,
  };
}

function usageOfChunk(payload: string): Usage | undefined {
  if (upstreamJsonProblem(payload)) return undefined; // as usageOfTimings
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
  // Events read so far, and how many the max_tokens sent allows (eventAllowance).
  const allowance = eventAllowance(opened.request, windowOf(call.route));
  let events = 0;
  // Diagnosis (rawDumpDir): the attempt's upstream events as received.
  const raw: string[] | undefined = deps.dumpRaw ? [] : undefined;
  let failure: ToolproofError | undefined;
  let usage: Usage | undefined;
  // toolproof asked for usage the client did not ask for: the usage chunk is not the client's.
  const dropUsage =
    opened.request.stream_options?.include_usage === true &&
    call.original.stream_options?.include_usage !== true;
  // dropUsage: the last finish chunk, until the event after it says whether its timings moved.
  let heldFinish: string | undefined;
  // llama-server's last event with timings (the finish chunk's): its tokens when no usage came.
  let lastTimingsPayload = '';
  // Only a usage event is kept of the bytes relayed as they are: any other payload is a slice
  // that would pin its whole read for as long as the stream stays open.
  let lastUsagePayload = '';
  // What one read produced when it could not go as it came: one ordered text batch when the
  // output relays bytes, chunks otherwise.
  let text = '';
  let chunks: ChatCompletionChunk[] = [];
  /** The upstream's [DONE] was read; reading stopped there (untilDone, below). */
  let sawDone = false;
  /**
   * A choice's finish_reason was read: with [DONE], what says the answer is whole. A stream
   * that ends with neither was cut off (as stream-driver.ts judges it): the client gets the
   * error event, not a [DONE] of toolproof's that reads as a whole answer.
   */
  let finished = false;
  let afterDone = false;
  /** The stream's first bytes were read (its time to first chunk: the span's, the capture's). */
  let firstRead = false;

  const capture = call.capture !== undefined;
  const releaseFinish = (timings?: string): void => {
    if (heldFinish === undefined) return;
    // Back on the finish chunk only when they came off it: an object without timings of its own.
    const splice = timings !== undefined && heldFinish.endsWith('}') && !heldFinish.includes('"timings"');
    const finish = splice ? `${heldFinish.slice(0, -1)},"timings":${timings}}` : heldFinish;
    heldFinish = undefined;
    text += `data: ${finish}\n\n`;
  };
  const handle = (payload: string): void => {
    // What follows [DONE] in the read that carried it is not the client's (dropAfterDone).
    if (sawDone) return;
    raw?.push(payload);
    if (failure) return;
    if (payload === '[DONE]') {
      sawDone = true;
      releaseFinish();
      return;
    }
    if (payload.includes('"timings"')) lastTimingsPayload = payload;
    if (!finished && FINISH_SET.test(payload)) finished = true;
    if (dropUsage && relay && !payload.includes('"usage"') && payload.includes(FINISHED)) {
      releaseFinish();
      heldFinish = payload;
      return;
    }
    if (relay && !payload.includes('"error"') && !payload.includes('"usage"')) {
      releaseFinish();
      text += `data: ${payload}\n\n`; // an ordinary event as its own text, only re-framed
      return;
    }
    const chunk = parseEvent(payload, label);
    if (!(chunk instanceof ToolproofError) && isUsageEvent(chunk)) {
      usage = addUsage(usage, chunk.usage);
      // The client asked: the upstream's own chunk, as it came. toolproof asked: dropped, its
      // timings (llama-server's) back on the finish chunk they came off.
      if (dropUsage) releaseFinish(trailingTimings(payload));
      else if (relay) text += `data: ${payload}\n\n`;
      return;
    }
    releaseFinish();
    if (chunk instanceof ToolproofError) {
      failure = chunk;
      return;
    }
    if (isErrorEvent(chunk)) {
      failure = fromUpstreamError(500, parseUpstreamBody(payload), label);
      return;
    }
    if (typeof chunk.id === 'string') noteIdentity(call, chunk);
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
    releaseFinish();
    await flush();
    return STOP;
  };

  // Not async: an open stream waits in the read loop's frame only (see SseDriver.read).
  const onRead = (buf: Buffer | undefined): Promise<unknown> | typeof STOP | undefined => {
    if (buf === undefined) {
      let payloads: string[];
      try {
        payloads = parser.finish();
      } catch (err) {
        failure = midStreamError(call, err);
        return STOP;
      }
      for (const payload of payloads) handle(payload);
      if (!failure && !sawDone && !finished) failure = cutOff(label);
      return flushThenStop();
    }
    if (!firstRead) {
      firstRead = true;
      firstChunkRead(call);
    }
    let read: RelayRead;
    try {
      read = relay ? splitRead(parser, buf) : { before: parser.push(buf), whole: null, after: [] };
    } catch (err) {
      // SseEventTooLargeError (a ToolproofError, 502): an event past the framer's bound.
      failure = midStreamError(call, err);
      return STOP;
    }
    const whole = read.whole;
    if (capture)
      captureRead(call, buf, read.before.length + (whole?.payloads.length ?? 0) + read.after.length);
    const count = read.before.length + (whole?.payloads.length ?? 0) + read.after.length;
    if (!quiet.tick(count)) {
      failure = stalled(label);
      return STOP;
    }
    events += count;
    if (events > allowance.events && !sawDone) {
      failure = pastMaxTokens(label, allowance);
      return flushThenStop();
    }
    for (const payload of read.before) handle(payload);
    if (whole && relay && !failure && !sawDone && isPlainRelay(whole.payloads, dropUsage)) {
      // The fast path: whole events only, none needing toolproof, so the upstream's own bytes go
      // to the client as they are (its [DONE] included), after what came before them.
      releaseFinish();
      let done = false;
      let wholeBytes = whole.bytes;
      for (let i = 0; i < whole.payloads.length; i++) {
        const p = whole.payloads[i]!;
        raw?.push(p);
        if (p === '[DONE]') {
          done = true;
          // Events after it in the same read: the bytes end with it (the rest is dropped).
          if (i < whole.payloads.length - 1) wholeBytes = untilDoneIn(wholeBytes);
          break;
        }
        if (!finished && FINISH_SET.test(p)) finished = true;
        lastUsagePayload = p.includes('"usage"') ? p : '';
        // llama-server's timings end its finish chunk ("...}}"): a cheap look before the search.
        if (p.charCodeAt(p.length - 2) === 125 && p.includes('"timings"')) lastTimingsPayload = p;
      }
      if (done) sawDone = true;
      if (text === '' && (done || read.after.length === 0)) return relay(wholeBytes, done);
      const bytes = text === '' ? wholeBytes : Buffer.concat([Buffer.from(text), wholeBytes]);
      text = '';
      const wait = relay(bytes, done);
      for (const payload of read.after) handle(payload);
      if (failure) return wait.then(flushThenStop);
      return text || chunks.length > 0 ? wait.then(flush) : wait;
    }
    if (whole) for (const payload of whole.payloads) handle(payload);
    for (const payload of read.after) handle(payload);
    return failure ? flushThenStop() : text || chunks.length > 0 ? flush() : undefined;
  };
  // [DONE] ends the stream: reading stops after the read that carried it (dropAfterDone).
  const untilDone = (buf: Buffer | undefined): Promise<unknown> | typeof STOP | undefined => {
    const next = onRead(buf);
    if (!sawDone || buf === undefined || next === STOP) return next;
    afterDone = true;
    return next === undefined ? STOP : next.then(() => STOP);
  };
  return pumpBody(call, res, untilDone).then((readFailure): AttemptReport => {
    failure ??= readFailure;
    if (afterDone && !failure) dropAfterDone(res);
    if (capture) captureAttemptEnd(call, failure);
    if (raw) deps.dumpRaw?.(call.reqId, call.trace.attempts, raw.map((p) => `data: ${p}\n\n`).join(''));
    if (failure) {
      discardBody(res);
      return { kind: 'failed', error: failure, midStream: true };
    }
    // Relayed raw, the usage chunk went to the client as it was: read it once for the log line.
    let relayedUsage = usage ?? (lastUsagePayload !== '' ? usageOfChunk(lastUsagePayload) : undefined);
    // No usage (the client did not ask, nor did its key): llama-server's timings say the tokens.
    if (relayedUsage === undefined && lastTimingsPayload !== '') {
      const fromTimings = usageOfTimings(lastTimingsPayload);
      if (fromTimings) {
        relayedUsage = fromTimings.usage;
        noteTimings(call, fromTimings.timings);
      }
    }
    return { kind: 'relayed', ...(relayedUsage ? { usage: relayedUsage } : {}) };
  });
}
