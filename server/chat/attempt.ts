/**
 * One upstream round trip for a chat completion, and the "fallback once" rule around it:
 * a forced request whose tool_choice "required" the upstream rejects (a message the fallback
 * table recognises as being about tool_choice, "required" or the grammar; any other error,
 * a 503 "busy" or a CUDA OOM included, is relayed as it is) is sent again once with "auto",
 * and the upstream + model pair is remembered so later requests skip the failed round trip.
 */
import { performance } from 'node:perf_hooks';
import { ToolproofError } from '../../protocol/errors.js';
import { stringifyJson } from '../../protocol/lossless-json.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { shouldFallback } from '../../policies/tool-choice-fallback.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { toUpstreamError, type UpstreamResponse } from '../upstream.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects } from './effects.js';
import {
  captureAttemptBody,
  captureAttemptEnd,
  captureAttemptOpened,
  captureAttemptSent,
  captureDecision,
} from '../capture/recorder.js';
import { runRequestPolicies } from '../../policies/composition.js';

const MAX_ERROR_BODY = 1024 * 1024;
/** The largest non-streamed upstream body toolproof reads (a completion is rarely over 1 MiB). */
const MAX_UPSTREAM_BODY = 64 * 1024 * 1024;

/**
 * Abandons an upstream body: cancels the upstream request if it is still running. Never throws
 * and never surfaces later (the body has no events to go unhandled).
 */
export function discardBody(res: UpstreamResponse): void {
  res.body.destroy();
}

/** An error body, at most `limit` bytes (the rest is dropped: it is only shown to people). */
export async function readText(res: UpstreamResponse, limit = MAX_ERROR_BODY): Promise<string> {
  // A torn error body still says what it managed to say.
  return (await res.body.partial(limit)).toString('utf8');
}

/**
 * A successful non-streamed body, whole. A body cut or stalled mid-way is the upstream's fault
 * (502/504, never 500); one larger than MAX_UPSTREAM_BODY is refused with a 502.
 */
export async function readUpstreamBody(res: UpstreamResponse, label: string): Promise<string> {
  return (await readUpstreamBytes(res, label)).toString('utf8');
}

/**
 * The same body as bytes, for a relay that does not look inside: no UTF-8 decoding and encoding
 * again. A UTF-8 byte-order mark is skipped on a body of declared length (as undici's text()
 * did, which this replaced; see relayBytes in pipeline.ts for the rest of the equivalence).
 */
export async function readUpstreamBytes(res: UpstreamResponse, label: string): Promise<Buffer> {
  const declared = res.body.declaredLength;
  if (declared > MAX_UPSTREAM_BODY) {
    discardBody(res);
    throw tooLarge(label);
  }
  let whole: Buffer | null;
  try {
    whole = await res.body.bytes(MAX_UPSTREAM_BODY);
  } catch (err) {
    throw toUpstreamError(err, label); // an abort stays an abort: the client is gone anyway
  }
  if (whole === null) throw tooLarge(label);
  if (declared >= 0 && whole.length > 2 && whole[0] === 0xef && whole[1] === 0xbb && whole[2] === 0xbf)
    return whole.subarray(3);
  return whole;
}

function tooLarge(label: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent a response larger than ${MAX_UPSTREAM_BODY} bytes.`,
  });
}

function serializeRequest(call: ChatCall, request: ChatCompletionRequest): string | Buffer {
  if (request === call.original && !call.route.upstreamModel) return call.rawBody;
  let out = call.route.upstreamModel ? { ...request, model: call.route.upstreamModel } : request;
  // A rewritten stream asks for usage, as the JSON body always carries it: the cache and
  // discarded-token figures then hold for streams too (the client gets usage only if it asked,
  // front-doors/chat/output.ts). After the messages and tools, so no byte of the prompt moves.
  if (out.stream === true && out.stream_options?.include_usage !== true)
    out = { ...out, stream_options: { ...(out.stream_options ?? {}), include_usage: true } };
  // The client's numbers and key order as it wrote them (see ChatCall.setPhase).
  return stringifyJson(out, call.original);
}

async function sendOnce(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<UpstreamResponse> {
  call.trace.attempts++;
  const started = performance.now();
  const body = serializeRequest(call, request);
  captureAttemptSent(call, body, started);
  try {
    const res = await call.route.client.request({
      method: 'POST',
      path: '/chat/completions',
      body,
      headers: call.forwardHeaders,
      signal: call.signal,
      ...(call.affinityKey !== undefined ? { affinity: call.affinityKey } : {}),
      // A stream may stay open for minutes: undici must not hold the request body meanwhile.
      long: request.stream === true,
    });
    deps.metrics.hot
      .upstreamDuration(call.route.name, 'chat', call.route.client.label)
      .observe((performance.now() - started) / 1000);
    captureAttemptOpened(call, started, res);
    return res;
  } catch (err) {
    captureAttemptOpened(call, started, undefined, err as ToolproofError);
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
    captureAttemptBody(call, text);
    const body = parseUpstreamBody(text);
    deps.metrics.upstreamErrors
      .labels(call.route.name, call.route.client.label, res.status >= 500 ? 'status_5xx' : 'status_4xx')
      .inc();
    const canFallback = call.phase.forcedRequired && !call.trace.fallback;
    if (canFallback && shouldFallback({ status: res.status, body, bytesSentToClient: 0 })) {
      call.trace.fallback = true;
      captureAttemptEnd(call);
      captureDecision(
        call,
        'fallback',
        `the upstream rejected tool_choice "required" (status ${res.status}): sent again with "auto"`,
      );
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
    const error = fromUpstreamError(res.status, body, call.route.client.label, res.headers);
    captureAttemptEnd(call, error);
    return { kind: 'error', status: res.status, body, error, request: current };
  }
}

/** Effects in `after` that `before` does not already hold (compared as a multiset). */
export function newEffects<E extends { policy: string; kind: string; count?: number }>(
  before: readonly E[],
  after: readonly E[],
): E[] {
  const seen = new Map<string, number>();
  const key = (e: E) => `${e.policy}\u0000${e.kind}\u0000${e.count ?? 1}`;
  for (const e of before) seen.set(key(e), (seen.get(key(e)) ?? 0) + 1);
  const out: E[] = [];
  for (const e of after) {
    const n = seen.get(key(e)) ?? 0;
    if (n > 0) seen.set(key(e), n - 1);
    else out.push(e);
  }
  return out;
}
