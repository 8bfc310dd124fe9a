/**
 * One upstream round trip for a chat completion, and the "fallback once" rule around it:
 * a forced request whose tool_choice "required" the upstream rejects (a message the fallback
 * table recognises as being about tool_choice, "required" or the grammar; any other error,
 * a 503 "busy" or a CUDA OOM included, is relayed as it is) is sent again once with "auto",
 * and the upstream + model pair is remembered so later requests skip the failed round trip.
 */
import { performance } from 'node:perf_hooks';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { shouldFallback } from '../../policies/tool-choice-fallback.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { toUpstreamError, type UpstreamResponse } from '../upstream.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects } from './effects.js';
import { runRequestPolicies } from './policy-runner.js';
import type { PolicyEffect } from '../../policies/types.js';

const MAX_ERROR_BODY = 1024 * 1024;
/** The largest non-streamed upstream body toolproof reads (a completion is rarely over 1 MiB). */
export const MAX_UPSTREAM_BODY = 64 * 1024 * 1024;

/**
 * Abandons an upstream body. The error listener matters: destroying an unread undici body
 * emits 'error', and without a listener that becomes an uncaught exception (the process dies).
 */
export function discardBody(res: UpstreamResponse): void {
  res.body.on('error', () => {});
  res.body.destroy();
}

/** An error body, at most `limit` bytes (the rest is dropped: it is only shown to people). */
export async function readText(res: UpstreamResponse, limit = MAX_ERROR_BODY): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        discardBody(res);
        break;
      }
      chunks.push(chunk as Buffer);
    }
  } catch {
    // A torn error body still says what it managed to say.
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A successful non-streamed body, whole. A body cut or stalled mid-way is the upstream's fault
 * (502/504, never 500); one larger than MAX_UPSTREAM_BODY is refused with a 502.
 */
export function readUpstreamBody(res: UpstreamResponse, label: string): Promise<string> {
  return readWhole(res, label, 'text');
}

/**
 * The same body as bytes, for a relay that does not look inside: no UTF-8 decoding and encoding
 * again. The bytes are the ones readUpstreamBody's text stands for: undici's text() skips a
 * UTF-8 byte-order mark on a body of declared length, so that one is skipped here too (see
 * relayBytes in pipeline.ts for the rest of the equivalence).
 */
export function readUpstreamBytes(res: UpstreamResponse, label: string): Promise<Buffer> {
  return readWhole(res, label, 'bytes');
}

async function readWhole(res: UpstreamResponse, label: string, as: 'text'): Promise<string>;
async function readWhole(res: UpstreamResponse, label: string, as: 'bytes'): Promise<Buffer>;
async function readWhole(
  res: UpstreamResponse,
  label: string,
  as: 'text' | 'bytes',
): Promise<string | Buffer> {
  const declared = Number(res.headers['content-length']);
  if (declared > MAX_UPSTREAM_BODY) {
    discardBody(res);
    throw tooLarge(label);
  }
  if (declared >= 0) {
    // The usual case: a declared length under the cap (HTTP framing bounds the body), read by
    // undici's own consumer, with no async iterator per body.
    try {
      if (as === 'text') return await res.body.text();
      const u8 = await res.body.bytes();
      const start = u8.length > 2 && u8[0] === 0xef && u8[1] === 0xbb && u8[2] === 0xbf ? 3 : 0;
      return Buffer.from(u8.buffer, u8.byteOffset + start, u8.byteLength - start);
    } catch (err) {
      throw toUpstreamError(err, label);
    }
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_UPSTREAM_BODY) {
        discardBody(res);
        throw tooLarge(label);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof ToolproofError) throw err;
    throw toUpstreamError(err, label); // an abort stays an abort: the client is gone anyway
  }
  const whole = Buffer.concat(chunks);
  return as === 'text' ? whole.toString('utf8') : whole;
}

function tooLarge(label: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent a response larger than ${MAX_UPSTREAM_BODY} bytes.`,
  });
}

export function serializeRequest(call: ChatCall, request: ChatCompletionRequest): string | Buffer {
  if (request === call.original && !call.route.upstreamModel) return call.rawBody;
  return JSON.stringify(call.route.upstreamModel ? { ...request, model: call.route.upstreamModel } : request);
}

export async function sendOnce(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<UpstreamResponse> {
  call.trace.attempts++;
  const started = performance.now();
  try {
    const res = await call.route.client.request({
      method: 'POST',
      path: '/chat/completions',
      body: serializeRequest(call, request),
      headers: call.forwardHeaders,
      signal: call.signal,
    });
    deps.metrics.hot
      .upstreamDuration(call.route.name, 'chat', call.route.client.label)
      .observe((performance.now() - started) / 1000);
    return res;
  } catch (err) {
    if (!call.signal.aborted) {
      const kind = (err as ToolproofError).code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'unreachable';
      deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, kind).inc();
    }
    throw err;
  }
}

export type OpenResult =
  | { kind: 'ok'; res: UpstreamResponse; request: ChatCompletionRequest }
  | { kind: 'error'; status: number; body: unknown; error: ToolproofError; request: ChatCompletionRequest };

/**
 * Sends `request`; on a required-rejection applies the fallback once. Error responses are
 * read and returned (not thrown) so the caller can still recover calls hidden in them.
 */
export async function openUpstream(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<OpenResult> {
  let current = request;
  for (;;) {
    const res = await sendOnce(call, deps, current);
    if (res.status < 400) return { kind: 'ok', res, request: current };
    const text = await readText(res);
    const body = parseUpstreamBody(text);
    deps.metrics.upstreamErrors
      .labels(call.route.name, call.route.client.label, res.status >= 500 ? 'status_5xx' : 'status_4xx')
      .inc();
    const canFallback = call.phase.forcedRequired && !call.trace.fallback;
    if (canFallback && shouldFallback({ status: res.status, body, bytesSentToClient: 0 })) {
      call.trace.fallback = true;
      const upstream = call.route.client.label;
      deps.memory.remember(upstream, call.route.name, call.route.settings.fallbackTtlSeconds);
      deps.metrics.toolChoiceFallbacks.labels(upstream, call.route.name).inc();
      deps.metrics.toolChoiceFallbackActive.labels(upstream, call.route.name).set(1);
      const phase = runRequestPolicies(call.policies, call.original, {
        ...call.policyContext(),
        requiredRejected: true,
      });
      // Only what the re-run did differently is new (history repair repeats itself exactly).
      recordPolicyEffects(call, deps, newEffects(call.phase.effects, phase.effects));
      call.setPhase(phase);
      current = phase.request;
      continue;
    }
    return {
      kind: 'error',
      status: res.status,
      body,
      error: fromUpstreamError(res.status, body, call.route.client.label),
      request: current,
    };
  }
}

/** Effects in `after` that `before` does not already hold (compared as a multiset). */
export function newEffects(before: readonly PolicyEffect[], after: readonly PolicyEffect[]): PolicyEffect[] {
  const seen = new Map<string, number>();
  const key = (e: PolicyEffect) => `${e.policy}\u0000${e.kind}\u0000${e.count ?? 1}`;
  for (const e of before) seen.set(key(e), (seen.get(key(e)) ?? 0) + 1);
  const out: PolicyEffect[] = [];
  for (const e of after) {
    const n = seen.get(key(e)) ?? 0;
    if (n > 0) seen.set(key(e), n - 1);
    else out.push(e);
  }
  return out;
}
