/**
 * Errors to answers: any thrown value to a ToolproofError (normalizeError), an upstream's error
 * to one (fromUpstreamError), and the handlers that answer them in a shape a front door owns
 * (server/front-doors/<api>/errors.ts; OpenAI's, chat's, outside every door).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_UPSTREAM_DEPTH, upstreamJsonProblem } from '../protocol/completion-shape.js';
import { deeperThan } from '../protocol/json-depth.js';
import { openAIOverflowMessage, parseContextOverflow } from '../protocol/context-overflow.js';
import {
  ERROR_CATALOGUE,
  type ErrorCode,
  isToolproofError,
  retryAfterOf,
  ToolproofError,
} from '../protocol/errors.js';
import { openAIErrorBody } from './front-doors/chat/errors.js';
import { canonicalTarget } from './request-target.js';
import { anthropicErrorBody } from './front-doors/messages/errors.js';

/**
 * A request node's HTTP parser refused before any route saw it (headers too large, a bad
 * Content-Length or chunk, a request not received in time) as the bytes of a whole response:
 * in the API's own shape rather than Fastify's `{"error":"Bad Request","message":"Client Error"}`.
 * No route exists yet, so the request line (when it was read) picks the shape; a request whose
 * headers were read and whose body was not received in time (408) is picked by its URL (`url`).
 */
export function clientErrorResponse(err: { code?: string; rawPacket?: unknown }, url?: string): string {
  const [status, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'The request was not received in time.']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request headers are too large.']
        : [400, 'The HTTP request is malformed.'];
  const tpErr = new ToolproofError('TP_ERR_INVALID_FIELD', { status, message, cause: err });
  // node hands the bytes it had read as a Buffer (typed otherwise in Fastify's declarations).
  const line = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.subarray(0, 256).toString('latin1') : '';
  const anthropic = isMessagesTarget(/^[A-Z]+ (\S+)/.exec(line)?.[1] ?? url ?? '');
  const body = JSON.stringify(anthropic ? anthropicErrorBody(tpErr) : openAIErrorBody(tpErr));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`
  );
}

/** Whether a request target, however spelled, is the Messages API's (its errors are Anthropic's). */
function isMessagesTarget(target: string): boolean {
  return /^\/v1\/messages(?:[/?]|$)/.test(canonicalTarget(target));
}

/**
 * Fastify's frameworkErrors: a URL its router cannot decode (a bad percent-escape: `/v1/%ZZ`,
 * `/inspect/api/requests/%ZZ`) was answered in Fastify's own shape (`{"error":"Bad Request",
 * "code":"FST_ERR_BAD_URL",...}`) on every route. A 400 in the API's shape, picked by the path as
 * for a request node refused (no route was matched).
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const tpErr = new ToolproofError('TP_ERR_INVALID_FIELD', {
    status: 400,
    message:
      error.code === 'FST_ERR_BAD_URL'
        ? 'The request URL is malformed (a percent-escape that does not decode).'
        : 'The request could not be routed.',
    cause: error,
  });
  const anthropic = isMessagesTarget(request.raw.url ?? '');
  void reply
    .code(400)
    .type('application/json; charset=utf-8')
    .send(anthropic ? anthropicErrorBody(tpErr) : openAIErrorBody(tpErr));
}

/** The request a connection is receiving, once its headers were read (`noteReceiving`). */
const RECEIVING = Symbol('toolproof.receiving');
type Receiving = { [RECEIVING]?: IncomingMessage };

/**
 * Marks `req` as the request its connection is receiving: a body that is not received in time is
 * node's clientError (408), which carries no request line (it was parsed long before), and
 * answered a Messages client (a body sent a byte a second) in OpenAI's shape.
 */
export function noteReceiving(req: IncomingMessage): void {
  (req.socket as Receiving)[RECEIVING] = req;
}

/** Fastify's clientErrorHandler: the answer above, then the connection is closed (as node does). */
export function handleClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // Only while its body is still coming: a later request's headers on a kept-alive connection
  // are not that request's.
  const req = (socket as Receiving)[RECEIVING];
  const url = req && !req.complete ? req.url : undefined;
  if (socket.writable) socket.write(clientErrorResponse(err, url));
  socket.destroy(err);
}

function typeForStatus(status: number): string {
  if (status === 401 || status === 403) return 'authentication_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

import { upstreamErrorMessage } from '../protocol/error-body.js';

export { upstreamErrorMessage };

/** Parses an upstream error body (JSON or text) without ever throwing. */
export function parseUpstreamBody(text: string): unknown {
  const t = text.trim();
  // A body JSON.parse would pay seconds for (nesting, distinct keys) is read as the text it is.
  if ((t.startsWith('{') || t.startsWith('[')) && upstreamJsonProblem(t) === undefined) {
    let body: unknown;
    try {
      body = JSON.parse(t);
    } catch {
      return text;
    }
    // So is one nested too deep to be written again: a body under the scan's 16 KB parses at
    // once, but 7,000 nested arrays in it overflowed JSON.stringify's stack where the body was
    // relayed (the client's error's `upstream`) or its FastAPI `detail` list quoted: a 500.
    return deeperThan(body, MAX_UPSTREAM_DEPTH) ? text : body;
  }
  return text;
}

/**
 * An upstream's Retry-After worth relaying: on a 429 or a 503 (RFC 9110 §10.2.3), as delay
 * seconds or an HTTP date, nothing else (a header value is never copied blindly).
 */
function relayedRetryAfter(status: number, headers: IncomingHttpHeaders | undefined): string | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const value = headers?.['retry-after'];
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return v;
  if (v.length <= 64 && /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v)) return v;
  return undefined;
}

/** OpenAI's duration form of x-ratelimit-reset-* ("6s", "1m1s"). */
function resetDuration(seconds: number): string {
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

/**
 * Sets the Retry-After of `err` on a response not yet sent, and a key limit's state as OpenAI's
 * x-ratelimit-{limit,remaining,reset}-{requests,tokens} (what scripts and gateways that pace
 * themselves read; the SDKs, Codex and opencode go by Retry-After); on the Messages API as
 * Anthropic's anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}, the reset an RFC 3339
 * time (before, the Messages door sent OpenAI's names).
 */
function setRetryAfter(reply: FastifyReply, err: ToolproofError, request: FastifyRequest): void {
  const retryAfter = retryAfterOf(err);
  if (retryAfter !== undefined) reply.header('retry-after', retryAfter);
  const limits = err.detail?.kind === 'retry-later' ? err.detail.limits : undefined;
  if (limits === undefined) return;
  const anthropic = request.routeOptions.config?.api === 'messages';
  for (const family of ['requests', 'tokens'] as const) {
    const state = limits[family];
    if (state === undefined) continue;
    if (anthropic) {
      const reset = new Date(Math.ceil(Date.now() / 1000 + state.resetSeconds) * 1000);
      reply.header(`anthropic-ratelimit-${family}-limit`, String(state.limit));
      reply.header(`anthropic-ratelimit-${family}-remaining`, String(state.remaining));
      reply.header(`anthropic-ratelimit-${family}-reset`, reset.toISOString().replace('.000Z', 'Z'));
      continue;
    }
    reply.header(`x-ratelimit-limit-${family}`, String(state.limit));
    reply.header(`x-ratelimit-remaining-${family}`, String(state.remaining));
    reply.header(`x-ratelimit-reset-${family}`, resetDuration(state.resetSeconds));
  }
}

/** An upstream's 404 about the model (vLLM's "The model `x` does not exist.", "model 'x' not found"). */
const NO_SUCH_MODEL = /\bmodel\b[^\n]{0,200}?\b(?:does not exist|not found)\b/i;

/**
 * An upstream's error, relayed with its status and message in the OpenAI shape; its own
 * body is kept under error.upstream for clients that need backend-specific details, and its
 * Retry-After (429, 503) becomes the response's: clients' back-off depends on it.
 */
export function fromUpstreamError(
  status: number,
  body: unknown,
  label: string,
  headers?: IncomingHttpHeaders,
): ToolproofError {
  const retryAfter = relayedRetryAfter(status, headers);
  // The conversation does not fit: every front door answers with what its clients compact on.
  const overflow = status === 400 || status === 413 || status >= 500 ? parseContextOverflow(body) : undefined;
  if (overflow)
    return new ToolproofError('TP_ERR_CONTEXT_LENGTH_EXCEEDED', {
      status: 400,
      param: 'messages',
      message: openAIOverflowMessage(overflow),
      detail: { kind: 'context-overflow', overflow, upstream: body },
    });
  const message = upstreamErrorMessage(body, `The upstream ${label} returned HTTP ${status}.`);
  // The upstream does not serve the name (vLLM: "The model `x` does not exist."): OpenAI's
  // model_not_found, as for a name toolproof itself does not know, its body kept beside it.
  if (status === 404 && NO_SUCH_MODEL.test(message.slice(0, 300)))
    return new ToolproofError('TP_ERR_MODEL_NOT_FOUND', {
      param: 'model',
      message,
      detail: { kind: 'upstream', upstream: body },
    });
  // `"error": null` is an object to typeof: reading its fields threw (toolproof's own 500).
  const nested = body && typeof body === 'object' ? (body as Record<string, unknown>).error : undefined;
  const inner =
    nested && typeof nested === 'object'
      ? (nested as Record<string, unknown>)
      : body && typeof body === 'object'
        ? (body as Record<string, unknown>)
        : {};
  const type = typeof inner.type === 'string' && inner.type ? inner.type : typeForStatus(status);
  const param = typeof inner.param === 'string' ? inner.param : null;
  return new ToolproofError('TP_ERR_UPSTREAM_ERROR', {
    status: status >= 400 && status <= 599 ? status : 502,
    type,
    param,
    message,
    detail: { kind: 'upstream', upstream: body, ...(retryAfter === undefined ? {} : { retryAfter }) },
  });
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'TP_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'TP_ERR_INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'TP_ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'TP_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'TP_ERR_INVALID_JSON',
};

/** One of ajv's errors, as fastify hands them over. */
interface ValidationError {
  instancePath?: string;
  schemaPath?: string;
  keyword?: string;
  message?: string;
  params?: unknown;
}

/**
 * The error that says what is wrong. ajv (allErrors off) stops at the first failing keyword, so
 * the last error is the one that failed; for an anyOf / oneOf it is preceded by every branch's
 * own errors, and the first of those ("must be string" for a `tool_choice` object) describes
 * a branch the value never meant. The branch the value is of (the one that did not fail on its
 * `type` at the union's own place) says what is wrong, through nested unions too; when every
 * branch failed on its type: "must be string or object".
 */
export function decisiveError(errors: readonly ValidationError[]): ValidationError {
  let scope = errors;
  let err = scope[scope.length - 1]!;
  while (err.keyword === 'anyOf' || err.keyword === 'oneOf') {
    const prefix = `${err.schemaPath}/`;
    const branches = new Map<string, ValidationError[]>();
    for (const e of scope) {
      if (!e.schemaPath?.startsWith(prefix)) continue;
      const branch = e.schemaPath.slice(prefix.length).split('/', 1)[0]!;
      const list = branches.get(branch);
      if (list) list.push(e);
      else branches.set(branch, [e]);
    }
    if (branches.size === 0) return err; // a oneOf that more than one branch matched
    const at = err.instancePath;
    const wrongType = (e: ValidationError) => e.keyword === 'type' && e.instancePath === at;
    const fitting = [...branches.values()].find((list) => !list.some(wrongType));
    if (!fitting) {
      const types = [...branches.values()].flatMap((list) =>
        list
          .filter(wrongType)
          .flatMap((e) => (e.params as { type?: string | string[] } | undefined)?.type ?? []),
      );
      return { ...err, message: `must be ${[...new Set(types)].join(' or ')}` };
    }
    scope = fitting;
    err = fitting[fitting.length - 1]!;
  }
  return err;
}

/** Any thrown value -> a ToolproofError (never leaks internals beyond a message). */
export function normalizeError(err: unknown): ToolproofError {
  if (isToolproofError(err)) return err;
  const fe = err as FastifyError & { validation?: ValidationError[] };
  if (fe?.validation && fe.validation.length > 0) {
    const first = { ...decisiveError(fe.validation) };
    let field = (first.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
    const missing = (first.params as { missingProperty?: string } | undefined)?.missingProperty;
    if (missing) field = field ? `${field}.${missing}` : missing;
    const allowed = (first.params as { allowedValues?: unknown } | undefined)?.allowedValues;
    if (first.keyword === 'enum' && Array.isArray(allowed) && allowed.length <= 16)
      first.message = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
    return new ToolproofError('TP_ERR_INVALID_FIELD', {
      param: field || null,
      message: missing
        ? `Missing required field "${field}".`
        : `Invalid field "${field || 'body'}": ${first.message ?? 'invalid value'}.`,
      cause: err,
    });
  }
  const mapped = fe?.code && Object.hasOwn(FASTIFY_CODES, fe.code) ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return new ToolproofError(mapped, { cause: err });
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ToolproofError('TP_ERR_INVALID_FIELD', {
      status: fe.statusCode,
      message: fe.message,
      cause: err,
    });
  }
  return new ToolproofError('TP_ERR_INTERNAL', { cause: err });
}

/**
 * The error handler, for the whole app (OpenAI's error shape) or a front door's scope (its own
 * shape, `toBody`): every thrown value answered once, toolproof's own bugs logged and counted.
 */
export function errorHandler(
  /** The error's body; `request` says whose (a route several APIs share answers each in its own). */
  toBody: (err: ToolproofError, request: FastifyRequest) => unknown,
  /** toolproof's own bug answered as a 500 (counted by the caller's metrics). */
  onInternalError?: (model: string) => void,
): (err: unknown, request: FastifyRequest, reply: FastifyReply) => void {
  return (err, request, reply) => {
    const tpErr = normalizeError(err);
    if (tpErr.status >= 500 && tpErr.code === 'TP_ERR_INTERNAL') {
      request.log.error({ err }, 'internal error');
      onInternalError?.(request.tp?.model ?? '');
    }
    request.tpError = tpErr;
    setRetryAfter(reply, tpErr, request);
    void reply.code(tpErr.status).type('application/json; charset=utf-8').send(toBody(tpErr, request));
  };
}

export function registerErrorHandling(
  app: FastifyInstance,
  /** toolproof's own bug answered as a 500 (counted by the caller's metrics). */
  onInternalError?: (model: string) => void,
): void {
  app.setErrorHandler(errorHandler(openAIErrorBody, onInternalError));
  app.setNotFoundHandler((request, reply) => {
    const err = new ToolproofError('TP_ERR_NOT_FOUND', {
      message: `Unknown route: ${request.method} ${request.url.split('?')[0]}.`,
    });
    reply.code(err.status).send(openAIErrorBody(err));
  });
}

export { ERROR_CATALOGUE };
