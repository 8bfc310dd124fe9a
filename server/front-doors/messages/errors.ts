/**
 * Anthropic's error wire shape, owned by the Messages door. The status stays toolproof's (the
 * catalogue's, or the upstream's own when relayed); the type is the one Anthropic uses for that
 * status, so SDKs raise their usual exception classes (BadRequestError, AuthenticationError, ...).
 * Pure.
 */
import type { ErrorBody } from '../../../protocol/anthropic/types.js';
import { anthropicOverflowMessage } from '../../../protocol/context-overflow.js';
import type { ToolproofError } from '../../../protocol/errors.js';

function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

export function anthropicErrorBody(err: Pick<ToolproofError, 'status' | 'message' | 'detail'>): ErrorBody {
  // A context overflow in Anthropic's words, which Claude Code compacts on (context-overflow.ts).
  const message =
    err.detail?.kind === 'context-overflow' ? anthropicOverflowMessage(err.detail.overflow) : err.message;
  const error: ErrorBody['error'] = { type: anthropicErrorType(err.status), message };
  if (err.detail?.kind === 'error-code') error.details = { error_code: err.detail.errorCode };
  return { type: 'error', error };
}

/** Anthropic's stream error: `event: error` with the same body as an error response. */
export function messagesErrorEvent(err: ToolproofError): string {
  const body = anthropicErrorBody(err);
  return `event: ${body.type}\ndata: ${JSON.stringify(body)}\n\n`;
}
