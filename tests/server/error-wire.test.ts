/**
 * Every front door's error body and stream error event, for each kind of error (each catalogue
 * code, a param, relayed upstream errors with and without Retry-After, context overflows as vLLM
 * and llama-server word them), byte for byte against tests/fixtures/errors/wire.json. That file
 * was written by the code before the errors moved into the doors (server/front-doors/<api>/
 * errors.ts, ErrorDetail), so the move changed no byte a client reads.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode, retryAfterOf, ToolproofError } from '../../protocol/errors.js';
import type { ResponsesRequest } from '../../protocol/responses/types.js';
import { fromUpstreamError } from '../../server/error-handler.js';
import { FRONT_DOORS } from '../../server/front-doors/index.js';

interface Wire {
  status: number;
  retryAfter: string | null;
  chat: { body: string; event: string };
  responses: { body: string; event: string };
  messages: { body: string; event: string };
}

const golden = JSON.parse(readFileSync('tests/fixtures/errors/wire.json', 'utf8')) as Record<string, Wire>;

const LLAMA_OVERFLOW = {
  error: {
    code: 400,
    message: 'the request exceeds the available context size, try increasing it',
    type: 'exceed_context_size_error',
    n_prompt_tokens: 9000,
    n_ctx: 8192,
  },
};
const VLLM_OVERFLOW = {
  error: {
    message:
      "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    type: 'BadRequestError',
    param: null,
    code: 400,
  },
};

function cases(): Record<string, ToolproofError> {
  const out: Record<string, ToolproofError> = {};
  for (const code of Object.keys(ERROR_CATALOGUE)) out[code] = new ToolproofError(code as ErrorCode);
  out.invalid_field_param = new ToolproofError('TP_ERR_INVALID_FIELD', {
    param: 'tools.0.name',
    message: 'bad "name"',
  });
  const up = 'http://u/v1';
  out.upstream_429 = fromUpstreamError(
    429,
    { error: { message: 'slow down', type: 'rate_limit', param: null } },
    up,
    { 'retry-after': '7' },
  );
  out.upstream_503_date = fromUpstreamError(503, 'busy', up, {
    'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT',
  });
  out.upstream_500_text = fromUpstreamError(500, 'oops', up);
  out.upstream_404_obj = fromUpstreamError(404, { detail: 'no such model' }, up);
  out.overflow_vllm = fromUpstreamError(400, VLLM_OVERFLOW, up);
  out.overflow_llama = fromUpstreamError(400, LLAMA_OVERFLOW, up);
  return out;
}

/** The turn each door's event needs: only Responses reads it (the response as it stands). */
function turnOf(api: string): never {
  if (api !== 'responses') return undefined as never;
  const request = { model: 'm', input: 'hi' } as ResponsesRequest;
  return { request, newId: (p: string) => `${p}_1`, createdAt: 1 } as never;
}

describe('each front door owns its error body and its error event', () => {
  const all = cases();
  it.each(Object.keys(golden))('%s: the same bytes on every door as before the move', (name) => {
    const err = all[name];
    expect(err, `${name} is no longer built`).toBeDefined();
    const want = golden[name]!;
    expect(err!.status).toBe(want.status);
    expect(retryAfterOf(err!) ?? null).toBe(want.retryAfter);
    for (const door of FRONT_DOORS) {
      const wire = want[door.api];
      expect(JSON.stringify(door.errorBody(err!)), `${door.api} body`).toBe(wire.body);
      expect(door.errorEvent(err!, turnOf(door.api)), `${door.api} event`).toBe(wire.event);
    }
  });

  it('every catalogue code has its golden bytes', () => {
    const missing = Object.keys(ERROR_CATALOGUE).filter((code) => !(code in golden));
    expect(missing).toEqual([]);
  });
});
