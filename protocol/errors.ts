/**
 * The one error catalogue. Every error toolproof itself produces has a code here, with its
 * HTTP status, OpenAI `type` and a default message. How an error becomes bytes is each front
 * door's own (server/front-doors/<api>/errors.ts: its error body and its stream's error event);
 * everything else throws or returns a ToolproofError.
 *
 * Adding an error: one entry here. One that carries more than a message (an upstream's body, a
 * Retry-After, numbers a door words its own way) adds one member to ErrorDetail, and each door
 * that shows it reads it there.
 */

export interface ErrorSpec {
  status: number;
  type: string;
  message: string;
  /** The `code` OpenAI-shaped bodies carry instead of the TP_ERR_ name, where the API defines one. */
  wireCode?: string;
}

export const ERROR_CATALOGUE = {
  TP_ERR_INVALID_JSON: {
    status: 400,
    type: 'invalid_request_error',
    message: 'The request body is not valid JSON.',
  },
  TP_ERR_INVALID_FIELD: {
    status: 400,
    type: 'invalid_request_error',
    message: 'A request field is invalid.',
  },
  TP_ERR_UNAUTHORIZED: {
    status: 401,
    type: 'authentication_error',
    message: 'Missing or invalid API key. Send it as "Authorization: Bearer <key>".',
    // OpenAI's code for a key it does not accept.
    wireCode: 'invalid_api_key',
  },
  TP_ERR_MODEL_FORBIDDEN: {
    status: 403,
    type: 'permission_error',
    message: 'This API key may not use this model.',
  },
  TP_ERR_NOT_FOUND: { status: 404, type: 'invalid_request_error', message: 'Unknown route.' },
  TP_ERR_MODEL_NOT_FOUND: {
    status: 404,
    type: 'invalid_request_error',
    message: 'The model does not exist.',
    // OpenAI's own code for it: what its clients (and the openai SDK's `err.code`) test.
    wireCode: 'model_not_found',
  },
  TP_ERR_BODY_TOO_LARGE: {
    status: 413,
    type: 'invalid_request_error',
    message: 'The request body is too large.',
  },
  TP_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    type: 'invalid_request_error',
    message: 'Send the request body as application/json.',
  },
  TP_ERR_RATE_LIMITED: {
    status: 429,
    // Each refusal says which limit as its type, as OpenAI does: "requests" or "tokens".
    type: 'rate_limit_error',
    message: 'This API key is over its rate limit; retry after the time in the Retry-After header.',
    // OpenAI's code for it (Codex reads "Please try again in Ns." under it in a stream's
    // response.failed event; over HTTP, clients go by Retry-After: docs/operations.md).
    wireCode: 'rate_limit_exceeded',
  },
  TP_ERR_QUEUE_FULL: {
    status: 429,
    type: 'rate_limit_error',
    message:
      "The model server is busy and toolproof's queue for it is full; retry after the time in the Retry-After header.",
  },
  // Never sent (nobody is left to read it): the reason a request was cancelled, on its log line.
  TP_ERR_CLIENT_CLOSED: {
    status: 499,
    type: 'client_closed_error',
    message: 'The client closed the connection before the response was complete.',
  },
  TP_ERR_CONTEXT_LENGTH_EXCEEDED: {
    status: 400,
    type: 'invalid_request_error',
    message: "The conversation does not fit in the model's context window.",
    // What Codex and OpenAI clients compact on (protocol/context-overflow.ts).
    wireCode: 'context_length_exceeded',
  },
  TP_ERR_INTERNAL: { status: 500, type: 'server_error', message: 'toolproof failed to handle the request.' },
  TP_ERR_UPSTREAM_UNREACHABLE: {
    status: 502,
    type: 'upstream_error',
    message: 'The upstream model server is unreachable.',
  },
  // The upstream answered, then closed its response (a stream, or a body after its headers)
  // before it was complete: a backend restarted or killed mid-answer. Not "unreachable".
  TP_ERR_UPSTREAM_CUT_OFF: {
    status: 502,
    type: 'upstream_error',
    message: 'The upstream model server closed its response before it was complete.',
  },
  TP_ERR_UPSTREAM_BAD_RESPONSE: {
    status: 502,
    type: 'upstream_error',
    message: 'The upstream model server sent a response toolproof could not read.',
  },
  TP_ERR_UPSTREAM_ERROR: {
    status: 502,
    type: 'upstream_error',
    message: 'The upstream model server returned an error.',
  },
  TP_ERR_SHUTTING_DOWN: { status: 503, type: 'server_error', message: 'toolproof is shutting down.' },
  // TOOLPROOF_WORKERS > 1: the worker that held a stream's state (and answered it) exited before
  // the stream's end; its state went with it (server/worker-relay.ts). Not toolproof's own bug.
  TP_ERR_WORKER_GONE: {
    status: 502,
    type: 'server_error',
    message: 'The toolproof worker that held this state exited before its answer ended.',
  },
  TP_ERR_QUEUE_TIMEOUT: {
    status: 503,
    type: 'server_error',
    message:
      'The model server stayed busy for longer than the queue timeout; retry after the time in the Retry-After header.',
  },
  TP_ERR_UPSTREAM_TIMEOUT: {
    status: 504,
    type: 'timeout_error',
    message: 'The upstream model server timed out.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

import type { ContextOverflow } from './context-overflow.js';

/**
 * What an error carries beyond its code, status, type, message and param: one member per kind,
 * read by the front doors (their bodies and events) and the error handler (its headers).
 * `retryAfter`, on any member, becomes the response's Retry-After header.
 */
export type ErrorDetail =
  /** An upstream's own error, relayed: its body (error.upstream in OpenAI's shape) and its Retry-After (429, 503). */
  | { readonly kind: 'upstream'; readonly upstream: unknown; readonly retryAfter?: string }
  /**
   * TP_ERR_CONTEXT_LENGTH_EXCEEDED: the numbers, so each front door words it the way its
   * clients compact on, and the upstream's body.
   */
  | { readonly kind: 'context-overflow'; readonly overflow: ContextOverflow; readonly upstream: unknown }
  /**
   * toolproof's own refusal that a client should retry later (admission queue, key limits);
   * `limits`: a key's limits as they stand, for OpenAI's x-ratelimit-* headers.
   */
  | { readonly kind: 'retry-later'; readonly retryAfter: string; readonly limits?: KeyLimitStates }
  /** A machine-readable reason Anthropic's SDKs act on (`error.details.error_code`, Messages only). */
  | { readonly kind: 'error-code'; readonly errorCode: string };

/** One of a key's per-minute limits as it stands: OpenAI's x-ratelimit-{limit,remaining,reset}-*. */
export interface KeyLimitState {
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the sliding minute holds nothing again. */
  readonly resetSeconds: number;
}

export interface KeyLimitStates {
  readonly requests?: KeyLimitState;
  readonly tokens?: KeyLimitState;
}

export interface ToolproofErrorOptions {
  message?: string;
  param?: string | null;
  /** Overrides the catalogue status (used when relaying an upstream's own status). */
  status?: number;
  /** Overrides the catalogue type (used when relaying an upstream's own error type). */
  type?: string;
  detail?: ErrorDetail;
  cause?: unknown;
}

export class ToolproofError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  /** The `code` on the wire: the catalogue's wireCode, or the TP_ERR_ name. */
  readonly wireCode: string;
  readonly detail: ErrorDetail | undefined;

  constructor(code: ErrorCode, options: ToolproofErrorOptions = {}) {
    const spec: ErrorSpec = ERROR_CATALOGUE[code];
    super(
      options.message ?? spec.message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ToolproofError';
    this.code = code;
    this.status = options.status ?? spec.status;
    this.type = options.type ?? spec.type;
    this.param = options.param ?? null;
    this.wireCode = spec.wireCode ?? code;
    this.detail = options.detail;
  }
}

export function isToolproofError(value: unknown): value is ToolproofError {
  return value instanceof ToolproofError;
}

/** The Retry-After an error's response carries, whatever its kind. */
export function retryAfterOf(err: ToolproofError): string | undefined {
  const d = err.detail;
  return d && 'retryAfter' in d ? d.retryAfter : undefined;
}

/** The upstream's own error body an error relays, when it relays one. */
export function upstreamBodyOf(err: ToolproofError): unknown {
  const d = err.detail;
  return d && 'upstream' in d ? d.upstream : undefined;
}
