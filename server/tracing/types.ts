/**
 * What the rest of the server sees of tracing: types only (erased at build), so that a process
 * with tracing off loads nothing of the OpenTelemetry SDK. Every call site is `x.span?.method(...)`:
 * with tracing off the field is undefined and the call is one property read.
 */
import type { FastifyRequest } from 'fastify';
import type { ChatCompletion, ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import type { PolicyEffect } from '../../policies/registry.js';
import type { UpstreamResponse } from '../upstream.js';

export type EventValue = string | number | boolean | string[];

/**
 * What a driver reported of one attempt (server/chat/attempt-end.ts's AttemptReport, seen
 * structurally: the chat call holds a RequestSpan, so this module names none of server/chat/).
 */
export interface TracedReport {
  kind: string;
  usage?: Usage;
  completion?: ChatCompletion;
  error?: { code?: string; message?: string };
}

/** One request's server span and the attempt span open under it (at most one at a time). */
export interface RequestSpan<Call extends object = object> {
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: the stream driver keeps the raw events. */
  readonly captureContent: boolean;
  /**
   * The request opened a chat call (any front door): the GenAI attributes of the request. The
   * client's headers and body (as it sent them): the session it names is the attempts'
   * `gen_ai.conversation.id`, read once, when the first attempt's record is written.
   */
  chat(call: Call, headers: Record<string, string | string[] | undefined>, clientBody: unknown): void;
  /**
   * An upstream attempt starts: opens its CLIENT span and returns the headers to send, the
   * client's traceparent replaced by one naming the attempt span.
   */
  attempt(
    call: Call,
    request: ChatCompletionRequest,
    headers: Record<string, string>,
  ): Record<string, string>;
  /** The attempt's response headers arrived (status, replica). */
  attemptOpened(res: UpstreamResponse): void;
  /** The attempt got no response (unreachable, timeout, the client left): its span ends. */
  attemptThrew(err: unknown, aborted: boolean): void;
  /** The attempt answered with an error status (its body read): its span ends. */
  attemptRejected(status: number, body: unknown): void;
  /** The attempt's stream brought its first bytes (its time to first chunk). */
  firstChunk(): void;
  /** A streamed choice's finish reason, as the upstream sent it. */
  finishReason(reason: string): void;
  /**
   * toolproof cut the streamed attempt off itself (server/chat/early-stop.ts, `cause`): the
   * server span's event, and the attempt's finish reason when the upstream gave none.
   */
  stoppedEarly(cause: string): void;
  /** The streamed attempt's events as received (only asked for under the content opt-in). */
  attemptOutput(payloads: readonly string[]): void;
  /** The driver read the attempt to its end: its span ends with what it amounted to. */
  attemptRead(report: TracedReport): void;
  /** Harness decisions: policy effects, as span events. */
  effects(effects: readonly PolicyEffect[], attempt: number): void;
  /** Any other harness decision, as a span event on the server span. */
  event(name: string, attributes?: Record<string, EventValue>): void;
  /**
   * A relayed completion or embedding goes upstream: opens its CLIENT span (the GenAI inference
   * or embeddings span, `operation`: `text_completion` or `embeddings`) and returns the headers to
   * send, naming it. Its end is reported as an attempt's (attemptOpened, attemptThrew,
   * attemptRejected, attemptRead with its usage).
   */
  relay(
    operation: 'text_completion' | 'embeddings',
    model: string,
    origin: string,
    request: object,
    headers: Record<string, string>,
  ): Record<string, string>;
  /** A pass-through request's headers: the server span's traceparent replaces the client's. */
  inject(headers: Record<string, string>): void;
  /** The response closed (ended, or the client went away first): every span of the request ends. */
  end(request: FastifyRequest, status: number, ended: boolean, headersSent: boolean): void;
  /** The trace's id (the log line names it). */
  readonly traceId: string;
}

/** The process's tracer: one per app (and so one per worker). */
export interface Tracing<Call extends object = object> {
  /** The server span of a request on `route` (a matched route pattern); undefined for ops routes. */
  startRequest(request: FastifyRequest, route: string | undefined): RequestSpan<Call> | undefined;
  /** Exports every ended span now. */
  flush(): Promise<void>;
  /** Flushes and stops exporting (graceful shutdown). */
  shutdown(): Promise<void>;
}
