/**
 * Opening a chat call from any front door: the route, the abort handle tied to the client's
 * connection, the trace, and the headers worth forwarding. Front doors translate their request
 * into a chat-completions request first, then share everything from here on.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keepSourceText } from '../../protocol/lossless-json.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { ToolproofError } from '../../protocol/errors.js';
import { RequestAbort } from '../abort.js';
import { affinityKey } from '../affinity.js';
import { beginCapture, recordRefused } from '../capture/recorder.js';
import type { AppState } from '../app-state.js';
import { reportDroppedTools } from '../dropped-tools.js';
import { memoryModel } from '../fallback-memory.js';
import { admissionOwner, allowsModel, countAgainstKey, forbiddenModel } from '../keys.js';
import { priorityOf } from '../priority.js';
import { learntEstimateScale, promptTokenEstimate, windowOf, withLearntWindow } from '../context-window.js';
import { refusedBefore } from '../over-window.js';
import { PROMPT_OVER_WINDOW } from '../../policies/types.js';
import { mappedRoute, resolveRoute } from '../routing.js';
import { type Api, ChatCall } from './context.js';
import { activePolicies } from '../../policies/composition.js';
import { rememberedRefusals, rememberedValues } from './refusals.js';
import { newTrace } from './trace.js';
import { prepareCallRequest } from './pipeline.js';

/** Headers worth forwarding upstream (conversation ids, tracing); never the client's API key. */
function forwardHeaders(
  headers: FastifyRequest['headers'],
  reqId: string,
  simulator: boolean,
): Record<string, string> {
  const out: Record<string, string> = { 'x-request-id': reqId };
  for (const name of ['x-conversation-id', 'traceparent', 'tracestate']) {
    const v = headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  // The built-in simulator's script selector means nothing to a real backend.
  const scenario = headers['x-sim-scenario'];
  if (simulator && typeof scenario === 'string') out['x-sim-scenario'] = scenario;
  // Last, where upstream.ts would add it: every chat request has a JSON body.
  out['content-type'] = 'application/json';
  return out;
}

export function startChatCall(
  request: FastifyRequest,
  state: AppState,
  body: ChatCompletionRequest,
  api: Api,
  /** The client's own bytes, when `body` is exactly what it sent (forwarded untouched). */
  rawBody?: Buffer,
): ChatCall {
  const key = request.tpKey;
  if (key && !allowsModel(key, typeof body.model === 'string' ? body.model : '')) {
    state.metrics.keyRefusals.labels(key.name, 'model').inc();
    throw forbiddenModel(key, String(body.model ?? ''));
  }
  // A window the upstream named refusing an earlier prompt stands in for one it never published.
  let route = withLearntWindow(
    resolveRoute(state.config, state.upstreams, body.model, state.modelLabels, key),
    state.chatDeps.windows,
    body.model,
    key?.name,
  );
  // A prompt beyond the model's window goes to its long-context model (before any byte is sent).
  let longContext: { from: string; to: string; reason: string } | undefined;
  const window = windowOf(route);
  // A key with an allow-list goes only to its own models, the long-context and fallback ones too:
  // a long prompt to a model it may use took it to one it may not (that one asked directly: 403).
  if (route.longContext && window !== undefined && allowsModel(key, route.longContext)) {
    const size = rawBody?.length ?? JSON.stringify(body.messages ?? []).length;
    const long =
      promptTokenEstimate(size) > window
        ? mappedRoute(state.config, state.upstreams, route.longContext)
        : undefined;
    if (long) {
      longContext = { from: route.name, to: long.name, reason: 'long_context' };
      state.metrics.routeFallbacks.labels(route.name, long.name, 'long_context').inc();
      route = long;
    }
  }
  // app.ts's close listener aborts it when the client goes away: no GPU time for nobody (and a
  // request waiting for a slot of its key leaves the key's queue).
  const controller = new RequestAbort();
  request.tpAbort = controller;
  // Known model, valid body: from here the request uses its key's limits (429 when over; over
  // its concurrency, it may wait first: request.tpKeyWait, settled before the first attempt).
  try {
    countAgainstKey(request, state.keyLimits, state.metrics, controller);
  } catch (err) {
    // Refused before its call began: the inspector shows it all the same (docs/inspect.md).
    if (state.capture) recordRefused(state.capture, request, api, body.model, request.rawBody ?? rawBody);
    throw err;
  }
  const call = new ChatCall(
    request.id,
    body,
    rawBody,
    route,
    activePolicies(state.policies, route.settings),
    controller,
    newTrace(),
    forwardHeaders(request.headers, request.id, state.config.simulator),
    state.memory.isActive(
      route.client.label,
      memoryModel(route.upstreamModel ?? String(body.model), key?.name),
    ),
    api,
  );
  // What the upstream refused of this model lately (images, schema keywords): rewritten from the start.
  call.refusedRemembered = rememberedRefusals(
    state.policies,
    state.chatDeps.refusals,
    route,
    body.model,
    key?.name,
  );
  // How many times the prompt estimate its backend counts, learnt from an earlier overflow refusal.
  call.estimateScale = learntEstimateScale(state.chatDeps.windows, route, body.model, key?.name);
  // ... and of this request's own values (image URLs it could not fetch): the same notes again.
  call.refusedValues = rememberedValues(call.policies, state.chatDeps.refusals, route, body, key?.name);
  // A prompt that begins with one the upstream refused as over the window is over it too: cut
  // from the start, the same bytes a refusal would have given (over-window.ts).
  // And the bytes a token the session's first refusal counted: its turns judged by the same.
  const before = refusedBefore(state.chatDeps.windows, route, body, key?.name);
  if (before.over) call.refusedNow.add(PROMPT_OVER_WINDOW);
  call.bytesPerToken = before.bytesPerToken;
  call.priority = priorityOf({
    headers: request.headers,
    model: typeof body.model === 'string' ? body.model : '',
    ...(route.priority ? { route: route.priority } : {}),
    ...(key?.priority ? { key: key.priority } : {}),
  });
  call.trace.priority = call.priority;
  if (longContext) {
    call.trace.routeFallbacks = [longContext];
    call.trace.servedBy = route.name;
  }
  if (route.fallback) call.fallbacksLeft = route.fallback.filter((m) => allowsModel(key, m));
  if (key) call.trace.key = key.name;
  call.owner = admissionOwner(request, key);
  if (key) call.keyWait = { waits: state.keyWaits, entry: key, reached: false };
  // A key that counts tokens needs a stream's usage, asked for upstream even when the client did not.
  if (key?.tokensPerMinute !== undefined && body.stream === true) call.doorFacts = { streamUsage: true };
  // Several replicas: the conversation's key picks the one that holds its prefix in cache.
  if (route.client.replicas > 1 && state.config.affinity?.enabled !== false)
    call.affinityKey = affinityKey(request.headers, request.body, body);
  // The inspector groups requests into sessions by the same key (docs/inspect.md); the capture
  // makes its own when routing did not (one replica).
  if (state.capture) beginCapture(state.capture, request, call, call.affinityKey, request.rawBody ?? rawBody);
  // Several keys: each draws on its own share of the process's compile budget too.
  call.compileBudget = state.chatDeps.compileBudgets?.forRequest(
    undefined,
    key && state.config.keys.length > 1 ? key.name : undefined,
  );
  if (request.tpSpan) {
    call.span = request.tpSpan;
    call.span.chat(call, request.headers, request.body);
  }
  // The call owns the client's bytes from here (and drops them once the request is rewritten):
  // the Fastify request, alive as long as the response, must not keep a second reference.
  request.rawBody = undefined;
  request.tp = { model: route.name, upstream: route.client.label, stream: body.stream === true, call, api };
  return call;
}

/**
 * A translated front door's start (Responses, Messages): the client's numbers and key order kept
 * from its bytes (the request is serialized again), the body translated with its model's
 * settings, the call opened, and the hosted tools the translation left out reported. Returns the
 * translation and the header a stream writes itself.
 */
export function startTranslatedCall<
  B extends { model: string },
  T extends { chat: ChatCompletionRequest; dropped: readonly string[]; refusal?: ToolproofError },
>(
  request: FastifyRequest,
  reply: FastifyReply,
  state: AppState,
  api: Api,
  translate: (body: B) => T,
): { call: ChatCall; translated: T; droppedHeader: Record<string, string> } {
  const body = request.body as B;
  const key = request.tpKey;
  if (key && !allowsModel(key, body.model)) {
    state.metrics.keyRefusals.labels(key.name, 'model').inc();
    throw forbiddenModel(key, body.model);
  }
  if (request.rawBody) keepSourceText(body, request.rawBody);
  const translated = translate(body);
  const call = startChatCall(request, state, translated.chat, api);
  if (translated.dropped.length > 0) {
    call.doorFacts = {
      ...call.doorFacts,
      hostedTools: {
        dropped: translated.dropped,
        ...(translated.refusal ? { refusal: translated.refusal } : {}),
      },
    };
    // A policy may refuse the request for them (Policy.refusesOnDoorFacts: hosted tools with
    // `reject`): a refused request is refused before anything says they were left out. Only
    // then prepared here: preparing runs every request policy, before the request's PDFs were
    // read (pipeline.ts reads them first), so each became a note "it was not extracted" on every
    // request that also declared a hosted tool (Codex declares web_search on every one).
    if (call.policies.some((p) => p.refusesOnDoorFacts === true)) prepareCallRequest(call, state.chatDeps);
  }
  const droppedHeader = reportDroppedTools(reply, state, call, translated.dropped);
  return { call, translated, droppedHeader };
}
