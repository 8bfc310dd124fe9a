/**
 * The only place that knows the error wire shape. Everything toolproof rejects or fails at,
 * and every upstream error it relays, leaves as {"error":{"message","type","param","code"}}.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE, type ErrorCode, isToolproofError, ToolproofError } from '../protocol/errors.js';
import type { OpenAIErrorBody } from '../protocol/openai.js';

export function toErrorBody(err: ToolproofError): OpenAIErrorBody {
  const body: OpenAIErrorBody = {
    error: { message: err.message, type: err.type, param: err.param, code: err.code },
  };
  if (err.upstream !== undefined) body.error.upstream = err.upstream;
  return body;
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
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * An upstream's error, relayed with its status and message in the OpenAI shape; its own
 * body is kept under error.upstream for clients that need backend-specific details.
 */
export function fromUpstreamError(status: number, body: unknown, label: string): ToolproofError {
  const inner =
    body && typeof body === 'object' && typeof (body as Record<string, unknown>).error === 'object'
      ? ((body as Record<string, unknown>).error as Record<string, unknown>)
      : body && typeof body === 'object'
        ? (body as Record<string, unknown>)
        : {};
  const type = typeof inner.type === 'string' && inner.type ? inner.type : typeForStatus(status);
  const param = typeof inner.param === 'string' ? inner.param : null;
  return new ToolproofError('TP_ERR_UPSTREAM_ERROR', {
    status: status >= 400 && status <= 599 ? status : 502,
    type,
    param,
    message: upstreamErrorMessage(body, `The upstream ${label} returned HTTP ${status}.`),
    upstream: body,
  });
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'TP_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'TP_ERR_INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'TP_ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'TP_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'TP_ERR_INVALID_JSON',
};

/** Any thrown value -> a ToolproofError (never leaks internals beyond a message). */
export function normalizeError(err: unknown): ToolproofError {
  if (isToolproofError(err)) return err;
  const fe = err as FastifyError & {
    validation?: Array<{ instancePath?: string; message?: string; params?: unknown }>;
  };
  if (fe?.validation && fe.validation.length > 0) {
    const first = fe.validation[0]!;
    let field = (first.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
    const missing = (first.params as { missingProperty?: string } | undefined)?.missingProperty;
    if (missing) field = field ? `${field}.${missing}` : missing;
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

export function registerErrorHandling(
  app: FastifyInstance,
  /** toolproof's own bug answered as a 500 (counted by the caller's metrics). */
  onInternalError?: (model: string) => void,
): void {
  app.setErrorHandler((err, request, reply) => {
    const tpErr = normalizeError(err);
    if (tpErr.status >= 500 && tpErr.code === 'TP_ERR_INTERNAL') {
      request.log.error({ err }, 'internal error');
      onInternalError?.(request.tp?.model ?? '');
    }
    request.tpError = tpErr;
    reply.code(tpErr.status).type('application/json; charset=utf-8').send(toErrorBody(tpErr));
  });
  app.setNotFoundHandler((request, reply) => {
    const err = new ToolproofError('TP_ERR_NOT_FOUND', {
      message: `Unknown route: ${request.method} ${request.url.split('?')[0]}.`,
    });
    reply.code(err.status).send(toErrorBody(err));
  });
}

export { ERROR_CATALOGUE };
