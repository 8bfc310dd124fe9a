/**
 * The streamed driver of one attempt: upstream SSE bytes -> events -> the policies' stream
 * chain -> StreamOutput, one client write per upstream read, with backpressure. It frames and
 * relays; what to do at the end (retry, settle, classify) is the attempt loop's (pipeline.ts).
 *
 * Hazards: an upstream read can fail at any time (undici error: an upstream fault), while a
 * throw from a policy hook is toolproof's own bug (TP_ERR_INTERNAL): the two are kept apart.
 * A response body that is abandoned is destroyed (discardBody), which cancels the upstream
 * request; the body has no events, so a late socket error cannot become an uncaught exception.
 */
import { chunkShapeProblem } from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, Usage } from '../../protocol/openai.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { SseParser } from '../sse.js';
import { toUpstreamError, type UpstreamResponse } from '../upstream.js';
import { discardBody, type OpenResult } from './attempt.js';
import type { ChatCall, ChatDeps } from './context.js';
import type { StreamOutput, StreamSummary } from './output.js';
import type { AttemptEnd } from './pipeline.js';
import { judgeCompletion, completionToChunks } from './pipeline.js';
import { createStreamChain, salvageUpstreamError } from './policy-runner.js';
import { recordPolicyEffects } from './effects.js';
import { discardDecided } from './early-stop.js';
import { noteTimings } from './prompt-cache.js';
import { addUsage } from './trace.js';
import { createFastLane, type LaneSink } from './fast-lane.js';

/** onRead's answer when the read loop ends. */
const STOP = Symbol('stop');

/** What reached the client over a stream, for the response-kind metric and the log line. */
export interface SeenOutput {
  calls: boolean;
  content: boolean;
}

export type StreamAttempt =
  | { kind: 'relayed'; summary: StreamSummary; usage?: Usage }
  | ({ kind: 'judged' } & AttemptEnd);

function note(seen: SeenOutput, chunk: ChatCompletionChunk): void {
  for (const c of chunk.choices ?? []) {
    if (c.delta?.tool_calls?.length) seen.calls = true;
    if (typeof c.delta?.content === 'string' && c.delta.content.length > 0) seen.content = true;
  }
}

/** A read whose events need no rewriting: no error event (those are normalized). */
function isPlainRelay(payloads: readonly string[]): boolean {
  for (const p of payloads) if (p.startsWith('{"error"') || p.startsWith('{ "error"')) return false;
  return true;
}

/** Every chunk repeats the same identity: a new object only when it changes. */
function noteIdentity(call: ChatCall, chunk: ChatCompletionChunk): void {
  const prev = call.streamIdentity;
  const model = chunk.model ?? prev.model;
  const created = chunk.created ?? prev.created;
  if (prev.id !== chunk.id || prev.model !== model || prev.created !== created)
    call.streamIdentity = { id: chunk.id, model, created };
}

function usageOfChunk(payload: string): Usage | undefined {
  try {
    const u = (JSON.parse(payload) as { usage?: Usage | null }).usage;
    return u && typeof u === 'object' ? u : undefined;
  } catch {
    return undefined;
  }
}

function midStreamError(call: ChatCall, err: unknown): ToolproofError {
  const mapped = toUpstreamError(err, call.route.client.label);
  if (mapped instanceof ToolproofError && mapped.code !== 'TP_ERR_UPSTREAM_UNREACHABLE') return mapped;
  return new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
    message: `The upstream ${call.route.client.label} closed the stream before it ended.`,
    cause: err,
  });
}

export async function streamAttempt(
  call: ChatCall,
  deps: ChatDeps,
  opened: Extract<OpenResult, { kind: 'ok' }>,
  out: StreamOutput,
  passthrough: boolean,
): Promise<StreamAttempt> {
  const res: UpstreamResponse = opened.res;
  const label = call.route.client.label;
  const contentType = String(res.headers['content-type'] ?? '');
  if (!contentType.includes('text/event-stream')) {
    discardBody(res);
    throw new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream ${label} answered a streaming request with ${contentType || 'no content type'}, not an event stream.`,
    });
  }
  out.open();
  const effects = call.beginAttempt();
  const chain = passthrough
    ? null
    : createStreamChain(
        call.policies,
        call.policyContext(),
        call.phase.memos,
        opened.request,
        call.original,
        effects,
      );
  const retrying = call.retriesUsed > 0;
  const relay = passthrough && out.relay ? out.relay.bind(out) : null;
  const parser = new SseParser();
  const seen: SeenOutput = { calls: false, content: false };
  let usage: Usage | undefined;
  let midError: ToolproofError | undefined;
  let salvaged: AttemptEnd | undefined;
  let lastPayload = '';
  let batch: ChatCompletionChunk[] = [];
  let rawBatch = '';
  // The fast lane (fast-lane.ts): argument-fragment events matched against a learned template
  // go through the chain as light deltas; answer text is framed by splicing when the output
  // frames text (chat), so such an event is neither parsed nor its chunk serialized.
  const frame = chain && out.frame && out.text ? out.frame.bind(out) : null;
  const writeText = frame && out.text ? out.text.bind(out) : null;
  let framedBatch = '';
  const lane = chain ? createFastLane(chain, frame) : null;
  // Diagnosis (rawDumpDir): the attempt's upstream events as received.
  const raw: string[] | undefined = deps.dumpRaw ? [] : undefined;

  const emit = (c: ChatCompletionChunk): void => {
    note(seen, c);
    if (!call.roleSent && c.choices?.[0]?.delta?.role !== undefined) call.roleSent = true;
    if (frame) framedBatch += frame(c);
    else batch.push(c);
  };

  const sink: LaneSink = {
    chunk: emit,
    framed(text) {
      // Framed answer text: content, by construction.
      seen.content = true;
      framedBatch += text;
    },
  };

  // Whether the upstream said it finished ([DONE], or a finish_reason): a stream that closes
  // without either was cut off, and is not judged as if it were whole.
  let finished = false;
  /** Cut off by toolproof (early-stop.ts): judged as what it is so far, the upstream cancelled. */
  let stoppedEarly = false;
  const handle = (payload: string): void => {
    raw?.push(payload);
    if (payload === '[DONE]') finished = true;
    if (midError || salvaged || payload === '[DONE]') return;
    if (lane?.take(payload, sink)) {
      noteIdentity(call, lane.frameChunk!);
      return;
    }
    if (relay && !payload.includes('"error"') && !payload.includes('"usage"')) {
      // Pass-through: an ordinary event is relayed as its own text, only re-framed.
      rawBatch += `data: ${payload}\n\n`;
      return;
    }
    let chunk: ChatCompletionChunk & { error?: unknown };
    try {
      chunk = JSON.parse(payload) as ChatCompletionChunk & { error?: unknown };
    } catch (err) {
      midError = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
        message: `The upstream ${label} sent an event that is not JSON.`,
        cause: err,
      });
      return;
    }
    if (chunk === null || typeof chunk !== 'object') {
      midError = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
        message: `The upstream ${label} sent an event that is not a JSON object.`,
      });
      return;
    }
    const problem = chunkShapeProblem(chunk);
    if (problem) {
      midError = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
        message: `The upstream ${label} sent an event with ${problem}.`,
      });
      return;
    }
    if (chunk.error !== undefined && !Array.isArray(chunk.choices)) {
      const body = parseUpstreamBody(payload);
      // llama-server's parser failure carries the model's text: when nothing of this attempt
      // reached the client yet, it is salvaged exactly as the non-streamed 500 would be.
      const rescue =
        chain && !seen.calls && !seen.content ? salvageUpstreamError(call, opened.request, body) : null;
      if (rescue) {
        recordPolicyEffects(call, deps, rescue.effects);
        salvaged = judgeCompletion(call, rescue.completion, opened.request);
        return;
      }
      midError = fromUpstreamError(500, body, label);
      return;
    }
    if (typeof chunk.id === 'string') noteIdentity(call, chunk);
    if (!finished && Array.isArray(chunk.choices))
      for (const c of chunk.choices) if (c?.finish_reason) finished = true;
    if ((chunk as { timings?: unknown }).timings !== undefined)
      noteTimings(call, (chunk as { timings?: unknown }).timings);
    if (chunk.usage && (!Array.isArray(chunk.choices) || chunk.choices.length === 0)) {
      usage = addUsage(usage, chunk.usage);
      return; // one summed usage chunk goes out at the very end
    }
    if (retrying && call.roleSent && Array.isArray(chunk.choices)) {
      // A retry continues the same client message: its opening role chunk is not repeated (when
      // the failed attempt's was held back with the rest of it, the retry's opens the message).
      const c0 = chunk.choices[0];
      if (c0?.delta?.role) {
        const { role: _role, ...rest } = c0.delta;
        chunk = { ...chunk, choices: [{ ...c0, delta: rest }, ...chunk.choices.slice(1)] };
      }
    }
    if (!chain) {
      // Pass-through keeps one ordered text batch when the output relays bytes.
      if (relay) rawBatch += `data: ${JSON.stringify(chunk)}\n\n`;
      else batch.push(chunk);
      return;
    }
    for (const c of chain.push(chunk)) emit(c);
    lane?.learn(payload, chunk);
  };

  const flushAll = async (): Promise<void> => {
    if (rawBatch && relay) {
      const text = rawBatch;
      rawBatch = '';
      await relay(Buffer.from(text), false);
    }
    if (framedBatch && writeText) {
      const text = framedBatch;
      framedBatch = '';
      await writeText(text);
    }
    if (batch.length === 0) return;
    const chunks = batch;
    batch = [];
    await out.chunks(chunks);
  };

  /**
   * Writes what a read produced. The hot path (chat framing: text only) returns a promise only
   * when the client's socket is full: no promise and no microtask hop per read otherwise.
   */
  const flush = (): Promise<void> | undefined => {
    if (rawBatch || batch.length > 0) return flushAll();
    if (!framedBatch || !writeText) return undefined;
    const text = framedBatch;
    framedBatch = '';
    return writeText(text);
  };

  const it = res.body[Symbol.asyncIterator]();
  // Bytes that hold no event (SSE comments, blank lines) do not count as progress: the clock
  // starts at the first such read after an event (no clock read per ordinary read).
  const idleMs = call.route.client.idleMs;
  let quietSince = -1;
  // One read's work, synchronous: the async loop below keeps nothing of a read (its bytes, its
  // decoded text, its payloads) across the wait for the next one, which an open stream would
  // otherwise hold for as long as the upstream stays silent. STOP ends the loop.
  const onRead = (buf: Buffer | undefined): Promise<unknown> | typeof STOP | undefined => {
    const startsClean = !parser.pending();
    let payloads: string[];
    try {
      payloads = buf === undefined ? parser.finish() : parser.push(buf);
    } catch (err) {
      // SseEventTooLargeError (a ToolproofError, 502): an event past the framer's bound.
      midError = midStreamError(call, err);
      return STOP;
    }
    if (buf === undefined) {
      for (const payload of payloads) handle(payload);
      if (chain && !finished && !midError && !salvaged) {
        midError = new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
          message: `The upstream ${label} closed the stream before the answer finished (no finish_reason, no end-of-stream marker).`,
        });
      }
      return STOP;
    }
    if (payloads.length > 0) quietSince = -1;
    else if (quietSince < 0) quietSince = performance.now();
    else if (performance.now() - quietSince > idleMs) {
      midError = new ToolproofError('TP_ERR_UPSTREAM_TIMEOUT', {
        message: `The upstream ${label} stalled: no event within the idle timeout (only comments or blank lines).`,
      });
      return STOP;
    }
    if (relay && startsClean && !parser.pending() && isPlainRelay(payloads)) {
      // Pass-through fast path: this read holds whole events only and none needs toolproof,
      // so the upstream's own bytes go to the client as they are (its [DONE] included).
      let done = false;
      for (const p of payloads) {
        raw?.push(p);
        if (p === '[DONE]') done = true;
        // Only a usage event is kept: any other payload is a slice that would pin its whole read
        // for as long as the stream stays open.
        else lastPayload = p.includes('"usage"') ? p : '';
      }
      return relay(buf, done);
    }
    for (const payload of payloads) handle(payload);
    if (midError || salvaged) return flushThenStop();
    if (chain && discardDecided(call, chain)) {
      // A retry is certain: the rest of this output would only be read to be thrown away.
      stoppedEarly = finished = true;
      return flushThenStop();
    }
    return flush();
  };
  const flushThenStop = async (): Promise<typeof STOP> => {
    const wait = flush();
    if (wait) await wait;
    return STOP;
  };

  // Each read is awaited and handled inside its own call, so the loop's suspended frame holds
  // no register of an earlier read while it waits for the next one.
  const step = async (): Promise<boolean> => {
    let buf: Buffer | undefined;
    try {
      const read = await it.next();
      buf = read.done ? undefined : (read.value as Buffer);
    } catch (err) {
      // The next read, with upstream failures told apart from toolproof's own.
      if (call.signal.aborted) throw err;
      midError = midStreamError(call, err);
      return true;
    }
    const next = onRead(buf);
    if (next === STOP) return true;
    if (next && (await next) === STOP) return true;
    return midError !== undefined || salvaged !== undefined;
  };
  while (!(await step()));
  if (raw) deps.dumpRaw?.(call.reqId, call.trace.attempts, raw.map((p) => `data: ${p}\n\n`).join(''));
  if (midError || salvaged || stoppedEarly) discardBody(res);
  if (stoppedEarly) deps.metrics.earlyStops.labels(call.route.name, 'retry-certain').inc();
  if (salvaged) {
    const completion = salvaged.completion;
    const chunks = !salvaged.retry && completion ? completionToChunks(completion) : [];
    const msg = completion?.choices?.[0]?.message;
    return {
      kind: 'judged',
      ...salvaged,
      seen: {
        calls: (msg?.tool_calls?.length ?? 0) > 0,
        content: typeof msg?.content === 'string' && msg.content.length > 0,
      },
      release: () => out.chunks(chunks),
      ...(usage ? { usage } : {}),
    };
  }
  if (midError) {
    deps.metrics.upstreamErrors.labels(call.route.name, label, 'mid_stream').inc();
    // What the chain held back (e.g. text that might have begun a marker) is still the user's.
    if (chain) await out.chunks(chain.end().chunks);
    throw midError;
  }
  await flush();
  if (!chain) {
    // Relayed raw, the usage chunk went to the client as it was: read it once for the log line.
    const relayedUsage = usage ?? (lastPayload !== '' ? usageOfChunk(lastPayload) : undefined);
    return {
      kind: 'relayed',
      summary: { ...call.streamIdentity },
      ...(relayedUsage ? { usage: relayedUsage } : {}),
    };
  }
  const end = chain.end();
  for (const c of end.chunks) note(seen, c);
  return {
    kind: 'judged',
    effects: end.effects,
    ...(end.retry ? { retry: end.retry } : {}),
    seen,
    release: () => out.chunks(end.chunks),
    ...(usage ? { usage } : {}),
  };
}
