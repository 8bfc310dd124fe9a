/**
 * Opening a chat call from any front door: the route, the abort handle tied to the client's
 * connection, the trace, and the headers worth forwarding. Front doors translate their request
 * into a chat-completions request first, then share everything from here on.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keepSourceText } from '../../protocol/lossless-json.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { ModelSettings } from '../../protocol/settings.js';
import { withPreserveThinking } from '../../protocol/template-kwargs.js';
import { RequestAbort } from '../abort.js';
import { affinityKey } from '../affinity.js';
import { beginCapture } from '../capture/recorder.js';
import type { AppState } from '../app-state.js';
import { reportDroppedTools } from '../dropped-tools.js';
import { resolveRoute } from '../routing.js';
import { type Api, ChatCall } from './context.js';
import { activePolicies } from '../../policies/composition.js';
import { newTrace } from './trace.js';

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
  const route = resolveRoute(state.config, state.upstreams, body.model, state.modelLabels);
  // Keep past reasoning in the template (docs/prefix.md): the same on every turn of the model.
  if (route.settings.preserveThinking === true) {
    const kept = withPreserveThinking(body);
    if (kept !== body) {
      body = kept;
      rawBody = undefined; // no longer the client's bytes as they are
    }
  }
  // app.ts's close listener aborts it when the client goes away: no GPU time for nobody.
  const controller = new RequestAbort();
  request.tpAbort = controller;
  const call = new ChatCall(
    request.id,
    body,
    rawBody,
    route,
    activePolicies(state.policies, route.settings),
    controller,
    newTrace(),
    forwardHeaders(request.headers, request.id, state.config.simulator),
    state.memory.isActive(route.client.label, route.name),
    api,
  );
  // Several replicas: the conversation's key picks the one that holds its prefix in cache.
  if (route.client.replicas > 1 && state.config.affinity?.enabled !== false)
    call.affinityKey = affinityKey(request.headers, request.body, body);
  // The inspector groups requests into sessions by the same key (docs/inspect.md).
  if (state.capture)
    beginCapture(
      state.capture,
      request,
      call,
      call.affinityKey ?? affinityKey(request.headers, request.body, body),
      request.rawBody ?? rawBody,
    );
  call.compileBudget = state.chatDeps.compileBudgets?.forRequest();
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
  T extends { chat: ChatCompletionRequest; dropped: readonly string[] },
>(
  request: FastifyRequest,
  reply: FastifyReply,
  state: AppState,
  api: Api,
  translate: (body: B, settings: ModelSettings) => T,
): { call: ChatCall; translated: T; droppedHeader: Record<string, string> } {
  const body = request.body as B;
  if (request.rawBody) keepSourceText(body, request.rawBody);
  const { settings } = resolveRoute(state.config, state.upstreams, body.model, state.modelLabels);
  const translated = translate(body, settings);
  const call = startChatCall(request, state, translated.chat, api);
  const droppedHeader = reportDroppedTools(reply, state, call, translated.dropped);
  return { call, translated, droppedHeader };
}
