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
import { activePolicies } from '../../policies/composition.js';
import { PROMPT_OVER_WINDOW } from '../../policies/types.js';
import { measuredBytesPerToken, refusalScale } from '../../policies/kit/overflow.js';
import { describeEffect } from '../../policies/registry.js';
import { shouldFallback } from '../../policies/tool-choice-fallback.js';
import { PRIORITY_RANK } from '../admission.js';
import {
  learntEstimateScale,
  promptTokensFromRefusal,
  rememberEstimateScale,
  rememberWindow,
  windowFromRefusal,
  withLearntWindow,
  withWindow,
} from '../context-window.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import { memoryModel } from '../fallback-memory.js';
import { mappedRoute } from '../routing.js';
import { toCutError, type UpstreamResponse } from '../upstream.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects } from './effects.js';
import {
  rememberedRefusals,
  rememberedValues,
  rememberPromptValues,
  rememberRefusal,
  rememberRefusedValues,
} from './refusals.js';
import { rememberBytesPerToken, rememberOverWindow } from '../over-window.js';
import { prepareRequest } from './prepare.js';
import {
  captureAttemptBody,
  captureAttemptEnd,
  captureAttemptOpened,
  captureAttemptSent,
  captureDecision,
} from '../capture/recorder.js';

const MAX_ERROR_BODY = 1024 * 1024;
/**
 * The largest upstream answer toolproof reads (a completion is rarely over 1 MiB): a non-streamed
 * body's bytes, a stream's event characters (stream-driver.ts).
 */
export const MAX_UPSTREAM_BODY = 64 * 1024 * 1024;

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
    throw toCutError(err, label, 'the response body'); // an abort stays an abort: the client is gone anyway
  }
  if (whole === null) throw tooLarge(label);
  if (declared >= 0 && whole.length > 2 && whole[0] === 0xef && whole[1] === 0xbb && whole[2] === 0xbf)
    return whole.subarray(3);
  return whole;
}

/**
 * The `kind` of toolproof_upstream_errors_total for a body readUpstreamBytes failed to read after
 * its headers came: a cut is `cut_off` (the backend was reached and began: never `unreachable`).
 */
export function bodyErrorKind(err: ToolproofError): 'cut_off' | 'timeout' | 'bad_response' {
  if (err.code === 'TP_ERR_UPSTREAM_CUT_OFF') return 'cut_off';
  return err.code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'bad_response';
}

/**
 * A body in a content coding (gzip, br...), which toolproof never asks for (it sends no
 * Accept-Encoding and reads bodies as they come): abandoned, and the fault named. Read as it
 * came, a gzipped body was "not JSON" (its bytes in the error), a gzipped stream no event at all
 * (the relays sent the client an empty answer ending in [DONE]). A proxy in front of the model
 * server that compresses unasked is the usual cause.
 */
export function encodedBody(res: UpstreamResponse, label: string): ToolproofError | undefined {
  const coding = res.headers['content-encoding'];
  const name = (Array.isArray(coding) ? coding.join(', ') : (coding ?? '')).trim().toLowerCase();
  if (name === '' || name === 'identity') return undefined;
  discardBody(res);
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent its answer in content-encoding ${JSON.stringify(name.slice(0, 64))}, which toolproof did not ask for and does not decode.`,
  });
}

export function tooLarge(label: string): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${label} sent a response larger than ${MAX_UPSTREAM_BODY} bytes.`,
  });
}

/**
 * The request's bytes: the client's own when no policy rewrote it, else serialized. Every rewrite
 * (the upstream's model name, usage for a stream included) is a request policy's (prepare.ts).
 * Encoded here, once: the transport would encode a string into a Buffer all the same (undici's
 * request, upstream.ts oneShot), and the capture copies these bytes into its arena rather than
 * keeping the string (an agent's 90 KB the collector would copy and promote with every record).
 */
function serializeRequest(call: ChatCall, request: ChatCompletionRequest): Buffer {
  const scheduling = call.route.client.schedulingPriority;
  if (request === call.original && !scheduling) return call.rawBody;
  // vLLM's priority scheduling (--scheduling-policy priority): lower is served first, as the
  // classes rank. Last key of the body: no byte of the prompt moves.
  const out = scheduling
    ? ({ ...request, priority: PRIORITY_RANK[call.priority] } as ChatCompletionRequest)
    : request;
  // The client's numbers and key order as it wrote them (see ChatCall.setPhase).
  return Buffer.from(stringifyJson(out, call.original));
}

async function sendOnce(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<UpstreamResponse> {
  call.trace.attempts++;
  const started = performance.now();
  // Tracing on: the attempt's span opens, and its traceparent replaces the client's.
  const headers = call.span ? call.span.attempt(call, request, call.forwardHeaders) : call.forwardHeaders;
  const queuedBefore = call.trace.queuedMs;
  const body = serializeRequest(call, request);
  captureAttemptSent(call, body, headers, started);
  try {
    const res = await call.route.client.request({
      method: 'POST',
      path: '/chat/completions',
      body,
      headers,
      signal: call.signal,
      ...(call.affinityKey !== undefined ? { affinity: call.affinityKey } : {}),
      // A stream may stay open for minutes: undici must not hold the request body meanwhile.
      long: request.stream === true,
      admission: call.admission(),
    });
    const opened = performance.now();
    deps.metrics.hot
      .upstreamDuration(call.route.name, 'chat', call.route.client.label)
      .observe((opened - started - (call.trace.queuedMs - queuedBefore)) / 1000);
    call.span?.attemptOpened(res);
    captureAttemptOpened(call, started, res, undefined, opened);
    return res;
  } catch (err) {
    call.span?.attemptThrew(err, call.signal.aborted);
    captureAttemptOpened(call, started, undefined, err as ToolproofError);
    // A refusal of toolproof's own admission queue is no upstream failure (admission_shed counts
    // it), nor is its key's revocation while it waited there (key-waits.ts).
    const code = (err as ToolproofError).code;
    if (
      !call.signal.aborted &&
      code !== 'TP_ERR_QUEUE_FULL' &&
      code !== 'TP_ERR_QUEUE_TIMEOUT' &&
      code !== 'TP_ERR_UNAUTHORIZED'
    ) {
      const kind = code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'unreachable';
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
    let res: UpstreamResponse;
    try {
      res = await sendOnce(call, deps, current);
    } catch (err) {
      const reason = fallOverReason(err);
      if (reason !== undefined && !call.signal.aborted && fallOver(call, deps, reason)) {
        current = forRoute(call, deps);
        continue;
      }
      throw err;
    }
    if (res.status < 400) {
      const encoded = encodedBody(res, call.route.client.label);
      if (encoded) {
        // An answer, but none toolproof can read: counted as the relays count it.
        deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, 'bad_response').inc();
        throw encoded;
      }
      for (const f of call.onAnswered.splice(0)) f();
      return { kind: 'ok', res, request: current };
    }
    if ((res.status === 502 || res.status === 503 || res.status === 529) && canFallOver(call)) {
      discardBody(res);
      deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, 'status_5xx').inc();
      fallOver(call, deps, `status_${res.status}`);
      current = forRoute(call, deps);
      continue;
    }
    const text = await readText(res);
    captureAttemptBody(call, text);
    const body = parseUpstreamBody(text);
    call.span?.attemptRejected(res.status, body);
    deps.metrics.upstreamErrors
      .labels(call.route.name, call.route.client.label, res.status >= 500 ? 'status_5xx' : 'status_4xx')
      .inc();
    // Before the tool_choice fallback: a forced request keeps "required", only what was refused goes.
    const rewritten = routeAroundRefusal(call, deps, res, body, current);
    if (rewritten) {
      current = rewritten;
      continue;
    }
    const fitted = fitLearntWindow(call, deps, res, body, current);
    if (fitted) {
      current = fitted;
      continue;
    }
    // "required" sent, toolproof's forced one or the client's own (then sent as "auto" and still
    // judged by corrective-retry): relayed, the rejection would come back on every later turn.
    const canFallback = call.phase.request.tool_choice === 'required' && !call.trace.fallback;
    if (canFallback && shouldFallback({ status: res.status, body, bytesSentToClient: 0 })) {
      call.trace.fallback = true;
      // The policy whose "required" the upstream rejected (its forced effect): the one that decided,
      // as every decision names its policy; it runs again below with requiredRejected.
      const policy = call.phase.effects.find((e) => describeEffect(e)?.type === 'forced')?.policy;
      call.span?.event('toolproof.fallback', {
        ...(policy ? { 'toolproof.policy': policy } : {}),
        'toolproof.attempt': call.trace.attempts,
        'toolproof.upstream': call.route.client.label,
        'http.response.status_code': res.status,
        'toolproof.tool_choice': 'auto',
      });
      captureAttemptEnd(call, fromUpstreamError(res.status, body, call.route.client.label, res.headers));
      captureDecision(
        call,
        'fallback',
        `the upstream rejected tool_choice "required" (status ${res.status}): sent again with "auto"`,
        undefined,
        policy,
      );
      const upstream = call.route.client.label;
      // Keyed by the model as the upstream knows it and the asking key (memoryModel); the label
      // only names the gauge's series.
      deps.memory.remember(
        upstream,
        memoryModel(call.route.upstreamModel ?? String(call.original.model), call.trace.key),
        call.route.settings.fallbackTtlSeconds,
        call.route.name,
      );
      deps.metrics.toolChoiceFallbacks.labels(upstream, call.route.name).inc();
      deps.metrics.toolChoiceFallbackActive.labels(upstream, call.route.name).set(1);
      const phase = prepareRequest(call.policies, call.original, {
        ...call.policyContext(),
        requiredRejected: true,
      });
      // Only what the re-run did differently is new (history repair repeats itself exactly).
      recordPolicyEffects(call, deps, newEffects(call.phase.effects, phase.effects));
      call.setPhase(phase);
      current = phase.request;
      continue;
    }
    const error = tooLongStill(
      call,
      fromUpstreamError(res.status, body, call.route.client.label, res.headers),
    );
    captureAttemptEnd(call, error);
    return { kind: 'error', status: res.status, body, error, request: current };
  }
}

/**
 * The upstream refused something of the request its model cannot take (a policy's refusal: images,
 * a schema keyword), which the agent would send again on every later turn: the request is prepared
 * again with the fact in `refused.now`, so that policy rewrites it (images as notes, the keywords
 * left out), and the upstream and model remember it, so later turns go rewritten from the start.
 * Once per fact. Undefined when no policy's refusal matched, or the one that did changed nothing
 * (the error is then the fallback's, or relayed).
 */
function routeAroundRefusal(
  call: ChatCall,
  deps: ChatDeps,
  res: UpstreamResponse,
  body: unknown,
  sent: ChatCompletionRequest,
): ChatCompletionRequest | undefined {
  const status = res.status;
  for (const policy of call.policies) {
    const refusal = policy.refusal;
    if (refusal === undefined || call.refusedNow.has(refusal.fact)) continue;
    if (!refusal.refused(status, body, sent, call.policyContext())) continue;
    call.refusedNow.add(refusal.fact);
    // A refusal of values (image URLs it could not fetch): those, not the model, are refused.
    const values = refusal.values?.named(status, body, sent) ?? [];
    for (const v of values) call.refusedValues.add(v);
    const phase = prepareRequest(call.policies, call.original, call.policyContext());
    const fresh = newEffects(call.phase.effects, phase.effects);
    if (phase.error || !fresh.some((e) => e.policy === policy.name)) continue;
    if (refusal.values === undefined)
      rememberRefusal(deps.refusals, call.route, call.original.model, refusal.fact, call.trace.key);
    const route = call.route;
    const original = call.original;
    const remember = () =>
      refusal.values?.ofPrompt === true
        ? rememberPromptValues(deps.refusals, route, original, refusal.fact, values, call.trace.key)
        : rememberRefusedValues(deps.refusals, route, original.model, refusal.fact, values, call.trace.key);
    // An error that may mean something else is believed once the request without the values is answered.
    if (refusal.values?.unsure?.(status, body)) call.onAnswered.push(remember);
    else remember();
    (call.trace.refused ??= []).push(refusal.decision);
    deps.metrics.upstreamRefusals.labels(call.route.client.label, call.route.name, refusal.decision).inc();
    call.span?.event(`toolproof.${refusal.decision.replaceAll('-', '_')}`, {
      'toolproof.policy': policy.name,
      'toolproof.attempt': call.trace.attempts,
      'toolproof.upstream': call.route.client.label,
      'http.response.status_code': status,
    });
    // The refused attempt keeps the upstream's error, as a relayed one would (the inspector shows it).
    captureAttemptEnd(call, fromUpstreamError(status, body, call.route.client.label, res.headers));
    captureDecision(call, refusal.decision, refusal.describe(status), undefined, policy.name);
    recordPolicyEffects(call, deps, fresh);
    call.setPhase(phase);
    return phase.request;
  }
  return undefined;
}

/**
 * The upstream refused a prompt over its model's window, a window toolproof did not know (the
 * backend does not publish it, or a gateway stands between) or knew larger than it is (a
 * `contextWindow` configured past the backend's): the agent would send the same prompt
 * on every later turn, and the session would be over. The window the refusal names is remembered
 * per upstream and model (later turns go rewritten from the start: start.ts), and the request is
 * prepared again with it as the model's contextWindow, so a tool result the window cannot hold is
 * cut as for a known window (policies/tool-result-cap), and sent once more. Once per request and
 * route. Undefined when the window was known, the error names none, or knowing it changes nothing
 * (the conversation itself is over the window: the client's to shorten, and the overflow is
 * relayed saying so, tooLongStill, as is a second refusal of the cut request).
 */
function fitLearntWindow(
  call: ChatCall,
  deps: ChatDeps,
  res: UpstreamResponse,
  body: unknown,
  /** The request the upstream refused. */
  sent: ChatCompletionRequest,
): ChatCompletionRequest | undefined {
  if (call.windowLearnt !== undefined) return undefined;
  const window = windowFromRefusal(res.status, body);
  if (window === undefined) return undefined;
  // A window known already is learnt only when the backend names a smaller one; either way the
  // refusal says this prompt is over it (PROMPT_OVER_WINDOW: the older tool results are cut).
  const known = call.route.settings.contextWindow;
  const learnt = !(known > 0 && window >= known);
  call.windowLearnt = window;
  // Known over from the start (a remembered refusal of this prompt's beginning: over-window.ts).
  const knownOver = call.refusedNow.has(PROMPT_OVER_WINDOW);
  call.refusedNow.add(PROMPT_OVER_WINDOW);
  // What the backend counted against the estimate of what was sent: where it counted more than
  // the boundary leaves room for, the boundary is placed as the backend counts, and the scale is
  // remembered so later turns cut the same (policies/kit/overflow.ts calibrationScale).
  const reported = promptTokensFromRefusal(res.status, body);
  const scale =
    reported === undefined || !Array.isArray(sent.messages)
      ? 1
      : refusalScale(reported, sent.tools, sent.messages);
  if (scale > (call.estimateScale ?? 1)) {
    call.estimateScale = scale;
    rememberEstimateScale(deps.windows, call.route, call.original.model, scale, call.trace.key);
  }
  if (learnt) rememberWindow(deps.windows, call.route, call.original.model, window, call.trace.key);
  // The bytes a token of the session's text, from its first refusal that counted it: a later
  // refusal's count of a longer prompt would give another ratio, and an earlier turn judged by
  // one could be judged otherwise by the next (policies/truncation cutTurnsOverWindow). Kept with
  // this prompt whether or not anything is cut: the next turn begins with it.
  if (call.bytesPerToken === undefined && reported !== undefined && Array.isArray(sent.messages))
    call.bytesPerToken = measuredBytesPerToken(reported, sent.tools, sent.messages);
  if (call.bytesPerToken !== undefined)
    rememberBytesPerToken(deps.windows, call.route, call.original, call.bytesPerToken, call.trace.key);
  const before = { route: call.route, policies: call.policies };
  const requiredRejected = deps.memory.isActive(
    call.route.client.label,
    memoryModel(call.route.upstreamModel ?? String(call.original.model), call.trace.key),
  );
  if (learnt) {
    call.route = withWindow(call.route, window);
    call.routeChanged(activePolicies(deps.policies, call.route.settings), requiredRejected);
  }
  const phase = prepareRequest(call.policies, call.original, call.policyContext());
  const fresh = newEffects(call.phase.effects, phase.effects);
  if (phase.error || fresh.length === 0) {
    if (!knownOver) call.refusedNow.delete(PROMPT_OVER_WINDOW);
    if (learnt) {
      call.route = before.route;
      call.routeChanged(before.policies, requiredRejected);
    }
    return undefined;
  }
  // This prompt is over: a later turn that begins with it is too, and goes cut from the start.
  rememberOverWindow(deps.windows, call.route, call.original, call.trace.key);
  const decision = learnt ? 'context-window-learnt' : 'prompt-over-window';
  (call.trace.refused ??= []).push(decision);
  deps.metrics.upstreamRefusals.labels(call.route.client.label, call.route.name, decision).inc();
  call.span?.event(learnt ? 'toolproof.context_window_learnt' : 'toolproof.prompt_over_window', {
    'toolproof.attempt': call.trace.attempts,
    'toolproof.upstream': call.route.client.label,
    'http.response.status_code': res.status,
  });
  captureAttemptEnd(call, fromUpstreamError(res.status, body, call.route.client.label, res.headers));
  captureDecision(
    call,
    decision,
    learnt
      ? `the upstream refused a prompt over its context window of ${window} tokens (status ${res.status}), a window ${known > 0 ? `smaller than the ${known} configured` : 'it does not publish'}: tool results it cannot hold cut to fit, sent again`
      : `the upstream refused a prompt over its context window of ${window} tokens (status ${res.status}): the older tool results cut to fit, sent again`,
  );
  recordPolicyEffects(call, deps, fresh);
  call.setPhase(phase);
  return phase.request;
}

/**
 * An overflow relayed after the window was learnt (fitLearntWindow): knowing it cut nothing, or
 * the cut request was refused again. The conversation itself is over the window: the message
 * says so (the Messages door writes its own wording from the numbers, error-handler.ts).
 */
function tooLongStill(call: ChatCall, error: ToolproofError): ToolproofError {
  if (call.windowLearnt === undefined || error.code !== 'TP_ERR_CONTEXT_LENGTH_EXCEEDED') return error;
  return new ToolproofError(error.code, {
    status: error.status,
    param: error.param ?? 'messages',
    message: `${error.message} toolproof cut the tool results and documents this window cannot hold; the conversation is still too long for it: shorten or compact it.`,
    ...(error.detail ? { detail: error.detail } : {}),
  });
}

/** Why a failed send may go to the next model of the route's fallback list (undefined: it may not). */
function fallOverReason(err: unknown): string | undefined {
  if (!(err instanceof ToolproofError)) return undefined;
  if (err.code === 'TP_ERR_UPSTREAM_UNREACHABLE' || err.code === 'TP_ERR_UPSTREAM_CUT_OFF')
    return 'connection';
  if (err.code === 'TP_ERR_QUEUE_FULL') return 'queue_full';
  return undefined;
}

/**
 * A fallback is taken only before any byte of the answer reached the client (a stream's
 * keep-alives carry none), so no output is ever sent twice.
 */
function canFallOver(call: ChatCall): boolean {
  return !call.roleSent && (call.fallbacksLeft?.length ?? 0) > 0 && !call.signal.aborted;
}

/** Moves the call to its next fallback model; false when there is none (or a byte went out). */
function fallOver(call: ChatCall, deps: ChatDeps, reason: string): boolean {
  if (!canFallOver(call) || deps.upstreams === undefined) return false;
  const next = mappedRoute(deps.config, deps.upstreams, call.fallbacksLeft!.shift()!);
  if (next === undefined) return false;
  const from = call.route.name;
  (call.trace.routeFallbacks ??= []).push({ from, to: next.name, reason });
  deps.metrics.routeFallbacks.labels(from, next.name, reason).inc();
  call.route = withLearntWindow(next, deps.windows, call.original.model, call.trace.key);
  call.trace.servedBy = next.name;
  return true;
}

/**
 * The request for the route the call moved to, prepared again with the fallback model's own
 * name, settings and active policies (the policies' effects were recorded for the first
 * preparation).
 */
function forRoute(call: ChatCall, deps: ChatDeps): ChatCompletionRequest {
  const route = call.route;
  // What the last route's upstream refused is that model's, not this one's.
  call.refusedNow.clear();
  call.windowLearnt = undefined;
  call.estimateScale = learntEstimateScale(deps.windows, route, call.original.model, call.trace.key);
  call.refusedRemembered = rememberedRefusals(
    deps.policies,
    deps.refusals,
    route,
    call.original.model,
    call.trace.key,
  );
  call.refusedValues = rememberedValues(deps.policies, deps.refusals, route, call.original, call.trace.key);
  call.routeChanged(
    activePolicies(deps.policies, route.settings),
    deps.memory.isActive(
      route.client.label,
      memoryModel(route.upstreamModel ?? String(call.original.model), call.trace.key),
    ),
  );
  const phase = prepareRequest(call.policies, call.original, call.policyContext());
  call.setPhase(phase);
  return phase.request;
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
