/**
 * The streamed driver: upstream SSE bytes -> events -> the policies' stream chain ->
 * StreamOutput, one client write per upstream read, with backpressure. It frames and reports
 * what it saw (the chain's verdict at the end, or the fault, an upstream error event included);
 * what to do next (salvage, retry, settle, classify) is the attempt loop's (pipeline.ts).
 * The pass-through relay is stream-relay.ts; the read loop and event faults, stream-read.ts.
 */
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, Usage } from '../../protocol/openai.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { SseParser } from '../sse.js';
import { discardBody, MAX_UPSTREAM_BODY, tooLarge } from './attempt.js';
import {
  type AttemptDriver,
  type AttemptEnd,
  type AttemptReport,
  completionToChunks,
  noteSeen,
  type OpenedResponse,
  type SeenOutput,
} from './attempt-end.js';
import type { ChatCall, ChatDeps } from './context.js';
import { carriesLogprobs, LogprobsCarrier } from './logprobs-carrier.js';
import { createFastLane, type FastLane, type LaneSink } from './fast-lane.js';
import type { StreamOutput } from './output.js';
import { createStreamChain, type StreamChain } from '../../policies/composition.js';
import type { PolicyEffect } from '../../policies/registry.js';
import {
  askedChoices,
  askedChoicesOf,
  NO_CHOICES,
  type OpenedCalls,
} from '../../protocol/completion-shape.js';
import {
  badStream,
  cutOff,
  dropAfterDone,
  eventAllowance,
  firstChunkRead,
  isErrorEvent,
  isUsageEvent,
  midStreamError,
  noteIdentity,
  notEventStream,
  parseEvent,
  pastMaxTokens,
  pumpBody,
  QuietClock,
  STOP,
  stalled,
} from './stream-read.js';
import { recordUnaskedChoices } from './effects.js';
import { captureAttemptEnd, captureDecision, captureRead } from '../capture/recorder.js';
import { relayStream } from './stream-relay.js';
import { discardDecided } from './early-stop.js';
import { noteTimings } from './prompt-cache.js';
import { addUsage } from './trace.js';
import { windowOf } from '../context-window.js';

type Failed = Extract<AttemptReport, { kind: 'failed' }>;

export class SseDriver implements AttemptDriver {
  /** What reached the client over every attempt so far (live output, then the delivered end). */
  private readonly seen: SeenOutput = { calls: false, content: false };
  /** The chain of the attempt read last: on a failure, what it held is still the user's. */
  private chain: StreamChain<PolicyEffect> | null = null;
  /** The stream was relayed as the upstream's events: its usage chunk, if any, went as it came. */
  private relayed = false;

  constructor(
    private readonly call: ChatCall,
    private readonly deps: ChatDeps,
    private readonly out: StreamOutput,
  ) {}

  // Not async, nor is the reader's read: an open stream's suspended frames are the loop's and
  // the read loop's only (each async frame an open stream waits in costs it ~0.3 KB of heap).
  read(opened: OpenedResponse, passthrough: boolean): Promise<AttemptReport> {
    const notSse = notEventStream(this.call, opened.res);
    if (notSse && this.call.capture) captureAttemptEnd(this.call, notSse);
    if (notSse) return Promise.resolve({ kind: 'failed', error: notSse, midStream: false });
    // Not opened here: the output opens on its first write, or at the keep-alive's first quiet
    // interval (sse-writer.ts open), so an attempt held whole and a refused retry after it still
    // answer with the refusal's own status, as the non-streamed request does.
    if (passthrough) {
      this.chain = null;
      this.relayed = this.out.relay !== undefined;
      return relayStream(this.call, this.deps, opened, this.out);
    }
    const reader = new StreamReader(this.call, this.deps, opened, this.out, this.seen);
    this.chain = reader.chain;
    return reader.read();
  }

  retried(): void {
    this.chain = null; // what it held at the end of a retried attempt never goes out
  }

  async failed(report: Failed): Promise<void> {
    if (!report.midStream) return;
    this.deps.metrics.upstreamErrors
      .labels(this.call.route.name, this.call.route.client.label, 'mid_stream')
      .inc();
    // What the chain held back (e.g. text that might have begun a marker) is still the user's.
    if (this.chain) await this.out.chunks(this.chain.end().chunks);
  }

  async deliver(end: AttemptEnd): Promise<SeenOutput> {
    // The stream hooks' held end, or a whole completion (salvaged from an error) replayed.
    this.chain = null;
    const chunks = end.held ?? (end.completion && !end.retry ? completionToChunks(end.completion) : []);
    for (const c of chunks) noteSeen(this.seen, c);
    this.out.open();
    await this.out.chunks(chunks);
    return this.seen;
  }

  async finish(usage: Usage | undefined): Promise<undefined> {
    // Relayed, the client had the upstream's own usage chunk when it asked (a second one, written
    // after the upstream's [DONE], was what a relayed include_usage stream ended with).
    await this.out.end({ ...this.call.streamIdentity, ...(usage && !this.relayed ? { usage } : {}) });
    return undefined;
  }
}

/**
 * One attempt's stream through the policies' stream chain. A class rather than closures: the
 * state of an open stream is these fields, and the methods are shared.
 */
class StreamReader implements LaneSink {
  readonly chain: StreamChain<PolicyEffect>;
  /** What this attempt sent the client live. */
  readonly live: SeenOutput = { calls: false, content: false };
  private readonly label: string;
  private readonly parser = new SseParser();
  private readonly quiet: QuietClock;
  /** The fast lane (fast-lane.ts), and the output's framing of one chunk when it has one (chat). */
  private readonly lane: FastLane;
  private readonly frame: ((c: ChatCompletionChunk) => string) | null;
  private readonly writeText: ((framed: string) => Promise<void> | undefined) | null;
  /** A retry continues the same client message: its opening role chunk is not repeated. */
  private readonly continues: boolean;
  /** Diagnosis (rawDumpDir): the attempt's upstream events as received. */
  private readonly raw: string[] | undefined;
  private readonly dumpRaw: ChatDeps['dumpRaw'];

  /** What the current read produced: framed text with a framing output, chunks otherwise. */
  private text = '';
  private chunks: ChatCompletionChunk[] = [];
  private usage: Usage | undefined;
  /**
   * Whether the upstream said it finished ([DONE], or a finish_reason): a stream that closes
   * without either was cut off, and is not judged as if it were whole.
   */
  private finished = false;
  /** The upstream sent `[DONE]`: whatever follows is not part of the answer. */
  private done = false;
  /** Reading stopped at `[DONE]`, before the body's end: its rest is dropped (settle). */
  private afterDone = false;
  /** Cut off by toolproof (early-stop.ts): judged as what it is so far, the upstream cancelled. */
  private stoppedEarly = false;
  /** The fault that ended the stream early. */
  private failure: Failed | undefined;
  /** The calls opened so far (their first delta must name the function: chunkShapeProblem). */
  private readonly calls: OpenedCalls = {};
  /** Whether any event carried a choice: a stream without one is no answer. */
  private sawChoice = false;
  /** How many choices the client asked for (`n`); those beyond are dropped (askedChoicesOf). */
  private readonly asked: number;
  /** Choices dropped so far (counted once, when the attempt ends). */
  private unasked = 0;
  /** The stream's first bytes were read (its time to first chunk: the span's, the capture's). */
  private firstRead = false;
  /** Characters of the events read so far: a stream weighs at most what a whole body may. */
  private received = 0;
  /** Events read so far, and how many the request's max_tokens allows (eventAllowance). */
  private events = 0;
  private readonly allowance: ReturnType<typeof eventAllowance>;
  /** Logprobs around the hooks, so that held text keeps them (logprobs-carrier.ts); from the first. */
  private logprobs: LogprobsCarrier | undefined;

  constructor(
    private readonly call: ChatCall,
    private readonly deps: ChatDeps,
    private readonly opened: OpenedResponse,
    private readonly out: StreamOutput,
    /** The driver's record of what reached the client over every attempt. */
    private readonly seen: SeenOutput,
  ) {
    this.label = call.route.client.label;
    this.quiet = new QuietClock(call.route.client.idleMs);
    this.allowance = eventAllowance(opened.request, windowOf(call.route));
    // (or the same request sent again after a cut: pipeline.ts resendAfterCut)
    this.continues = call.retriesUsed > 0 || call.roleSent;
    this.asked = askedChoices(call.original.n);
    this.dumpRaw = deps.dumpRaw;
    // Also under tracing's content opt-in: the attempt span shows what the model wrote.
    this.raw = deps.dumpRaw || call.span?.captureContent ? [] : undefined;
    const effects = call.beginAttempt();
    this.chain = createStreamChain(
      call.policies,
      call.policyContext(),
      call.phase.memos,
      opened.request,
      call.original,
      effects,
    );
    // Answer text is framed by splicing when the output frames text (chat), so an event taken by
    // the fast lane is neither parsed nor its chunk serialized.
    this.frame = out.frame && out.text ? out.frame.bind(out) : null;
    this.writeText = this.frame && out.text ? out.text.bind(out) : null;
    this.lane = createFastLane(this.chain, this.frame);
  }

  read(): Promise<AttemptReport> {
    return pumpBody(this.call, this.opened.res, this.onRead).then((failure) => this.settle(failure));
  }

  /** The stream ended (or failed): what the driver reports. */
  private async settle(readFailure: ToolproofError | undefined): Promise<AttemptReport> {
    if (readFailure && !this.failure) this.fail(readFailure);
    if (this.unasked > 0) recordUnaskedChoices(this.call, this.deps, this.unasked);
    // What went out live counts for the call's response kind, whatever the loop decides next.
    if (this.live.calls) this.seen.calls = true;
    if (this.live.content) this.seen.content = true;
    const raw = this.raw;
    if (raw) {
      this.dumpRaw?.(this.call.reqId, this.call.trace.attempts, raw.map((p) => `data: ${p}\n\n`).join(''));
      this.call.span?.attemptOutput(raw);
    }
    const usage = this.usage ? { usage: this.usage } : {};
    if (this.call.capture) captureAttemptEnd(this.call, this.failure?.error);
    if (this.failure) {
      discardBody(this.opened.res);
      return { ...this.failure, untouched: !this.live.calls && !this.live.content, ...usage };
    }
    await this.flush();
    if (this.afterDone) dropAfterDone(this.opened.res);
    if (this.stoppedEarly) {
      discardBody(this.opened.res);
      this.deps.metrics.earlyStops.labels(this.call.route.name, 'retry-certain').inc();
      this.call.span?.stoppedEarly('retry-certain');
      if (this.call.capture)
        captureDecision(
          this.call,
          'early-stop',
          'a retry is certain: the upstream stream was cut off at once',
        );
    }
    const end = this.chain.end();
    return {
      kind: 'streamed',
      end: {
        effects: end.effects,
        ...(end.retry ? { retry: end.retry } : {}),
        held: this.logprobs ? this.logprobs.end(end.chunks, this.call.streamIdentity) : end.chunks,
      },
      ...usage,
    };
  }

  // LaneSink: where the chain's output goes.
  chunk(c: ChatCompletionChunk): void {
    noteSeen(this.live, c);
    if (Array.isArray(c.choices))
      for (const choice of c.choices)
        if (choice?.delta?.role !== undefined) {
          this.call.roleSent = true;
          this.call.rolesSent.add(choice.index);
        }
    if (this.frame) this.text += this.frame(c);
    else this.chunks.push(c);
  }

  framed(text: string): void {
    this.live.content = true; // framed answer text: content, by construction
    this.text += text;
  }

  private fail(error: ToolproofError, body?: unknown): void {
    this.failure = { kind: 'failed', error, midStream: true, ...(body !== undefined ? { body } : {}) };
  }

  /** One read's work, synchronous (see OnRead). */
  private readonly onRead = (buf: Buffer | undefined): Promise<unknown> | typeof STOP | undefined => {
    let payloads: string[];
    try {
      payloads = buf === undefined ? this.parser.finish() : this.parser.push(buf);
    } catch (err) {
      // SseEventTooLargeError (a ToolproofError, 502): an event past the framer's bound.
      this.fail(midStreamError(this.call, err));
      return STOP;
    }
    if (buf !== undefined && this.call.capture) captureRead(this.call, buf, payloads.length);
    if (!this.firstRead && buf !== undefined) {
      this.firstRead = true;
      firstChunkRead(this.call);
    }
    if (buf !== undefined && !this.quiet.tick(payloads.length)) {
      this.fail(stalled(this.label));
      return STOP;
    }
    this.events += payloads.length;
    if (this.events > this.allowance.events && !this.done) {
      this.fail(pastMaxTokens(this.label, this.allowance));
      return this.flushThenStop();
    }
    for (const payload of payloads) this.handle(payload);
    if (buf === undefined) {
      if (!this.failure && !this.finished) this.fail(cutOff(this.label));
      if (!this.failure && !this.sawChoice) this.fail(badStream(this.label, NO_CHOICES));
      return this.flushThenStop();
    }
    if (this.failure) return this.flushThenStop();
    if (this.done) {
      // [DONE] ends the answer; nothing after it is read. An upstream that kept its connection
      // open after it (silent, or sending on) held the whole answer until its idle timeout made
      // it an error (120 s; a held answer was lost). The rest is dropped in the background.
      this.afterDone = true;
      if (!this.sawChoice) this.fail(badStream(this.label, NO_CHOICES));
      return this.flushThenStop();
    }
    if (discardDecided(this.call, this.chain)) {
      // A retry is certain: the rest of this output would only be read to be thrown away.
      this.stoppedEarly = this.finished = true;
      return this.flushThenStop();
    }
    return this.flush();
  };

  private handle(payload: string): void {
    this.raw?.push(payload);
    if (payload === '[DONE]') this.finished = this.done = true;
    // After [DONE] nothing is the answer: a whole (non-streamed) completion could not carry it,
    // so streamed and not would disagree.
    if (this.failure || this.done) return;
    // An answer streamed is refused past the size a whole one is (MAX_UPSTREAM_BODY): the
    // Responses door keeps the whole output for its closing events, so an endless stream from a
    // broken upstream grew the heap until the process died (200 MB of text: +2.5 GB, 22 s held).
    this.received += payload.length;
    if (this.received > MAX_UPSTREAM_BODY) {
      this.fail(tooLarge(this.label));
      return;
    }
    if (this.lane.take(payload, this)) {
      noteIdentity(this.call, this.lane.frameChunk!);
      return;
    }
    let chunk = parseEvent(payload, this.label, this.calls);
    if (chunk instanceof ToolproofError) {
      this.fail(chunk);
      return;
    }
    if (isErrorEvent(chunk)) {
      const body = parseUpstreamBody(payload);
      // llama-server's parser failure carries the model's text: while nothing of this attempt
      // reached the client, the loop may salvage it exactly as the non-streamed 500.
      const untouched = !this.live.calls && !this.live.content;
      this.fail(fromUpstreamError(500, body, this.label), untouched ? body : undefined);
      return;
    }
    if (typeof chunk.id === 'string') noteIdentity(this.call, chunk);
    if (Array.isArray(chunk.choices)) {
      const asked = askedChoicesOf(chunk.choices, this.asked);
      if (asked.dropped > 0) {
        this.unasked += asked.dropped;
        chunk = { ...chunk, choices: asked.choices as ChatCompletionChunk['choices'] };
      }
    }
    if (Array.isArray(chunk.choices) && chunk.choices.length > 0) this.sawChoice = true;
    if (Array.isArray(chunk.choices))
      for (const c of chunk.choices)
        if (c?.finish_reason) {
          this.finished = true;
          this.call.span?.finishReason(c.finish_reason);
        }
    if ((chunk as { timings?: unknown }).timings !== undefined)
      noteTimings(this.call, (chunk as { timings?: unknown }).timings);
    if (isUsageEvent(chunk)) {
      this.usage = addUsage(this.usage, chunk.usage);
      return; // one summed usage chunk goes out at the very end
    }
    if (this.continues && this.call.rolesSent.size > 0 && Array.isArray(chunk.choices)) {
      // A choice whose role chunk reached the client is not opened again; one whose role chunk
      // was held back with the rest of the failed attempt is opened by the retry's. Each choice
      // by its index: with n > 1, choice 1's role chunk is not choice 0's.
      const sent = this.call.rolesSent;
      if (chunk.choices.some((c) => c?.delta?.role && sent.has(c.index)))
        chunk = {
          ...chunk,
          choices: chunk.choices.map((c) => {
            if (!c?.delta?.role || !sent.has(c.index)) return c;
            const { role: _role, ...rest } = c.delta;
            return { ...c, delta: rest };
          }),
        };
    }
    const carrier =
      this.logprobs ?? (carriesLogprobs(chunk) ? (this.logprobs = new LogprobsCarrier()) : undefined);
    if (carrier) for (const c of carrier.give(this.chain.push(carrier.take(chunk)))) this.chunk(c);
    else for (const c of this.chain.push(chunk)) this.chunk(c);
    this.lane.learn(payload, chunk);
  }

  /**
   * Writes what a read produced. The hot path (chat framing: text only) returns a promise only
   * when the client's socket is full: no promise and no microtask hop per read otherwise.
   */
  private flush(): Promise<void> | undefined {
    if (this.text !== '' && this.writeText) {
      const text = this.text;
      this.text = '';
      return this.writeText(text);
    }
    if (this.chunks.length === 0) return undefined;
    const chunks = this.chunks;
    this.chunks = [];
    return this.out.chunks(chunks);
  }

  private async flushThenStop(): Promise<typeof STOP> {
    const wait = this.flush();
    if (wait) await wait;
    return STOP;
  }
}
