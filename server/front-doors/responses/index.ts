/**
 * POST /v1/responses (OpenAI Responses API; the output items it returned and each response's
 * place in its conversation are kept, bounded, for item_reference and previous_response_id:
 * item-store.ts). The request is translated into a chat
 * completion at the edge (protocol/responses/), runs through the one chat pipeline (forced
 * final_answer, fallback, history repair, leak recovery, validation, corrective retry), and
 * the answer is translated back: a response object, or the Responses event stream (output.ts).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ToolproofError } from '../../../protocol/errors.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import { translateRequest } from '../../../protocol/responses/request.js';
import {
  completionToResponse,
  ResponsesTranslator,
  type TranslatorContext,
} from '../../../protocol/responses/stream.js';
import { replayEvents } from '../../../protocol/responses/replay.js';
import type {
  InputItem,
  ResponseObject,
  ResponsesEvent,
  ResponsesRequest,
} from '../../../protocol/responses/types.js';
import type { AppState } from '../../app-state.js';
import type { ChatCall } from '../../chat/context.js';
import { stateId } from '../../worker-relay.js';
import { placedBytes } from '../../relayed.js';
import { isObject } from '../../../protocol/is-object.js';
import { startTranslatedCall } from '../../chat/start.js';
import { openAIErrorBody } from '../chat/errors.js';
import type { FrontDoor } from '../types.js';
import { listPage, registerConversations } from './conversations.js';
import { gatherItems, ITEMS_PATH, itemsAsked, tooLarge } from './gather.js';
import { responsesErrorEvent, responsesSseEvent as sseEvent } from './errors.js';
import type { ResponsesItemStore } from './item-store.js';
import { ResponsesSseOutput } from './output.js';
import { responsesBody } from './schema.js';
import { watchRelayedResponses } from './relayed-stream.js';

/** Ids of what is kept name the worker that keeps them (worker-relay.ts), OpenAI's shape all the same. */
const newId = (prefix: string): string => stateId(prefix, 24);

/**
 * The id of the kept state a request names first (worker-relay.ts carries it to the worker that
 * holds it): the {id} of a response's or conversation's path; a POST's previous_response_id,
 * conversation, or first item_reference. The items other item_references name on other workers
 * are asked of them and placed in the request first (gather.ts). Reads `input` up to its first
 * reference: linear in what the body holds.
 */
export function namedState(request: FastifyRequest, bodyToo: boolean): string | undefined {
  const url = request.routeOptions.url ?? '';
  if (url.startsWith('/v1/responses/:id') || url.startsWith('/v1/conversations/:id'))
    return (request.params as { id?: string }).id;
  const body = request.body;
  if (!bodyToo || !isObject(body)) return undefined;
  if (typeof body.previous_response_id === 'string') return body.previous_response_id;
  const conversation = isObject(body.conversation) ? body.conversation.id : body.conversation;
  if (typeof conversation === 'string') return conversation;
  if (!Array.isArray(body.input)) return undefined;
  for (const item of body.input)
    if (isObject(item) && item.type === 'item_reference' && typeof item.id === 'string') return item.id;
  return undefined;
}

/** What a Responses request keeps to its answer: the translator's context, and its chat call. */
interface ResponsesTurn extends TranslatorContext {
  call: ChatCall;
  /** The dropped-tools header, which a stream writes itself. */
  droppedHeader: Record<string, string>;
  /** The stream's translator, once output() opened one (its failure continues its sequence). */
  translator?: ResponsesTranslator;
  /** Keeps the answer (its output items, its place in its conversation); absent when not kept. */
  keep?: (response: ResponseObject, numbering?: Uint32Array) => void;
}

/**
 * The rest of the Responses API (input_tokens) is not
 * served: a 404 in the OpenAI shape, instead of falling through to the upstream, which answered in
 * its own (vLLM: {"detail": "Not Found"}) about ids it never issued.
 */
async function notServed(request: FastifyRequest): Promise<never> {
  throw new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Not served by toolproof's Responses API (it keeps responses to continue and retrieve them: previous_response_id, item_reference, GET /v1/responses/{id} and its input_items): ${request.method} ${request.url.split('?')[0]}.`,
  });
}

/** A response not held here: 404, as OpenAI answers an unknown one, saying why it may be gone. */
function responseNotHeld(id: string): ToolproofError {
  return new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Response ${JSON.stringify(id.slice(0, 200))} is not held by this toolproof. Responses are kept in the memory of the toolproof worker that answered them (reached from any worker of the same toolproof), under the API key that got them, bounded by TOOLPROOF_RESPONSES_STORE_MB: one answered with store: false, evicted, answered by another replica, or before a restart of toolproof or of that worker is gone.`,
  });
}

type ById = { Params: { id: string }; Querystring: { stream?: unknown; starting_after?: unknown } };

/**
 * GET /v1/responses/{id} (the openai SDK's `responses.retrieve`: a `background: true` client polls
 * it), DELETE, and POST .../cancel for a response this worker kept. A background request is
 * answered while it is open, so the response is final by the first poll, and cancel returns it as
 * it is (OpenAI's answer for a response already finished). A stream resumed (`?stream=true`,
 * `starting_after`) is rebuilt from the final response and, when it was streamed, its live numbering
 * (replay.ts): `starting_after` from the live stream resumes it where it stopped.
 */
function registerRetrieve(scope: FastifyInstance, state: AppState) {
  const config = { config: { api: 'responses' as const } };
  const held = (request: FastifyRequest<ById>) => {
    const store = state.responsesStore;
    const found = store?.response(request.tpKey?.key ?? '', request.params.id);
    if (!found) throw responseNotHeld(request.params.id);
    return found;
  };
  scope.get<ById>('/v1/responses/:id', config, async (request, reply) => {
    const stream = request.query.stream;
    if (stream !== 'true' && stream !== true) return held(request);
    // Resumed: the stream rebuilt from the final response, numbered as it went out (replay.ts).
    const after = request.query.starting_after;
    const from = after === undefined ? -1 : Number(after);
    if (!Number.isSafeInteger(from) || from < -1)
      throw new ToolproofError('TP_ERR_INVALID_FIELD', {
        param: 'starting_after',
        message: 'starting_after must be a non-negative integer (an event sequence_number).',
      });
    const response = held(request);
    const numbering = state.responsesStore?.streamNumbering(request.tpKey?.key ?? '', request.params.id);
    // Written as the client reads it, 64 KiB at a time: built as one string, a long stream's
    // replay held its whole size (and its events) per request, made on the event loop at once.
    return reply
      .header('cache-control', 'no-cache')
      .type('text/event-stream; charset=utf-8')
      .send(Readable.from(inBatches(replayEvents(response, from, numbering)), { objectMode: false }));
  });
  scope.post<ById>('/v1/responses/:id/cancel', config, async (request) => held(request));
  // The openai SDK's responses.inputItems.list: paged as OpenAI pages (desc by default, `after`, `limit`).
  scope.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>(
    '/v1/responses/:id/input_items',
    config,
    async (request) => {
      // Only the turns the page reaches are read, where the chain allows it (inputItemsPaged).
      const items = state.responsesStore?.inputItemsPaged(request.tpKey?.key ?? '', request.params.id);
      if (!items) throw responseNotHeld(request.params.id);
      return listPage(items, request.query);
    },
  );
  scope.delete<ById>('/v1/responses/:id', config, async (request) => {
    const { id } = request.params;
    if (!state.responsesStore?.deleteResponse(request.tpKey?.key ?? '', id)) throw responseNotHeld(id);
    return { id, object: 'response', deleted: true };
  });
}

/** Events as text, about 64 KiB a piece. */
function* inBatches(events: Iterable<ResponsesEvent>): Generator<string, void, undefined> {
  let text = '';
  for (const e of events) {
    text += sseEvent(e);
    if (text.length >= 65_536) {
      yield text;
      text = '';
    }
  }
  if (text !== '') yield text;
}

/** A request's `conversation` (its id, or `{id}`) as an id; a 400 naming it when it is neither. */
function conversationIdOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const id = typeof value === 'object' ? (value as { id?: unknown }).id : value;
  if (typeof id === 'string' && id !== '') return id;
  throw new ToolproofError('TP_ERR_INVALID_FIELD', {
    param: 'conversation',
    message: 'conversation must be a conversation id (POST /v1/conversations) or {"id": ...}.',
  });
}

/**
 * The conversation `id` continues, kept under `scope`; a miss is a 400 naming previous_response_id
 * that says why and what to do (the client's: only it holds the conversation now).
 */
function continued(
  store: ResponsesItemStore,
  scope: string,
  to: { previous: string } | { conversation: string },
  counted: AppState['metrics']['responsesPrevious'],
  /** Past it, only the bytes are counted (the caller's 400). */
  limitBytes: number,
): { items: InputItem[]; bytes: number; last: string | undefined } {
  const found =
    'previous' in to
      ? store.conversation(scope, to.previous, true, limitBytes)
      : store.conversationItems(scope, to.conversation, true, limitBytes);
  counted.labels(found.missing === undefined ? 'continued' : 'missing').inc();
  if (found.missing === undefined) return { last: 'previous' in to ? to.previous : undefined, ...found };
  const shown = (s: string) => JSON.stringify(s.slice(0, 200));
  const [param, named] =
    'previous' in to
      ? ['previous_response_id', `previous response ${shown(to.previous)}`]
      : ['conversation', `conversation ${shown(to.conversation)}`];
  const which =
    found.missing === ('previous' in to ? to.previous : to.conversation)
      ? `The ${named} is not held by this toolproof`
      : `The ${named} cannot be continued: its earlier response ${shown(found.missing)} is not held by this toolproof`;
  throw new ToolproofError('TP_ERR_INVALID_FIELD', {
    param,
    message: `${which}. Responses and conversations are kept in the memory of the toolproof worker that answered them (reached from any worker of the same toolproof), under the API key that got them, bounded by TOOLPROOF_RESPONSES_STORE_MB: one evicted, answered by another replica, given to another key, or kept before a restart of toolproof or of that worker is gone. Send the whole conversation in \`input\` without ${param}, or send all of a conversation's requests to one toolproof replica (a sticky route) with a store large enough to hold it.`,
  });
}

export const responses: FrontDoor<'responses', ResponsesTurn> = {
  api: 'responses',
  path: '/v1/responses',
  schema: {
    summary:
      'Create a model response (OpenAI Responses API), with forced tool use, leak recovery and history repair.',
    tags: ['openai'],
    body: responsesBody,
  },
  errorBody: openAIErrorBody,
  errorEvent: (err, turn) => responsesErrorEvent(err, (turn.translator ??= new ResponsesTranslator(turn))),
  open(request, reply, state) {
    const store = state.responsesStore;
    // Scoped to the key that presented it: another key's reference does not resolve.
    const scope = request.tpKey?.key ?? '';
    const body = request.body as ResponsesRequest;
    const previous = typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined;
    const conversation = conversationIdOf(body.conversation);
    const limit = state.config.bodyLimitBytes;
    // The response this one continues (kept with it as its link).
    let continues: string | undefined;
    const continuing = previous !== undefined || conversation !== undefined;
    const { call, translated, droppedHeader } = startTranslatedCall(
      request,
      reply,
      state,
      'responses',
      (b: ResponsesRequest) => {
        // Both set: translateRequest's 400.
        if (!store || (previous !== undefined && conversation !== undefined)) return translateRequest(b);
        const named =
          conversation !== undefined ? { conversation } : previous !== undefined ? { previous } : undefined;
        const history = named && continued(store, scope, named, state.metrics.responsesPrevious, limit);
        continues = history?.last;
        // With the items other workers hold, placed in it already (gather.ts).
        const already = (history?.bytes ?? 0) + placedBytes(request);
        if (already > limit) throw tooLarge(limit);
        const references = state.metrics.responsesItemReferences;
        const lookup = store.references(
          scope,
          limit,
          () => tooLarge(limit),
          already,
          (found) => references.labels(found ? 'resolved' : 'missing').inc(),
        );
        return translateRequest(b, lookup, history?.items);
      },
    );
    // A conversation holds its turns whatever `store` says: its next turn needs them. A background
    // response too, as on OpenAI's API: its client polls GET /v1/responses/{id}.
    const stored =
      store !== undefined && (body.store !== false || conversation !== undefined || body.background === true);
    // What this turn brought, kept with its answer (a later previous_response_id continues it).
    const brought: readonly InputItem[] =
      typeof body.input === 'string'
        ? [{ type: 'message', role: 'user', content: body.input }]
        : Array.isArray(body.input)
          ? body.input
          : [];
    return {
      request: body,
      newId,
      createdAt: Math.floor(Date.now() / 1000),
      catalog: translated.catalog,
      call,
      droppedHeader,
      stored,
      ...(stored
        ? {
            keep: (response: ResponseObject, numbering?: Uint32Array) => {
              const { output, ...envelope } = response;
              store.keepResponse(scope, response.id, continues, brought, output, !continuing, {
                envelope: stringifyJson(envelope),
                numbering,
              });
              if (conversation !== undefined) store.advanceConversation(scope, conversation, response.id);
            },
          }
        : {}),
    };
  },
  callOf: (turn) => turn.call,
  heldBy: (request) => namedState(request, request.routeOptions.url === '/v1/responses'),
  relayedStream: watchRelayedResponses,
  gatherHeld: gatherItems,
  answer(reply, result, turn) {
    // Only chat requests are relayed raw; a translated request always gets a completion.
    if (result.kind !== 'completion')
      throw new ToolproofError('TP_ERR_INTERNAL', { message: 'responses: unexpected raw chat result' });
    const response = completionToResponse(result.completion, turn, result.usage);
    turn.keep?.(response);
    return reply.type('application/json; charset=utf-8').send(stringifyJson(response));
  },
  routes(scope, state) {
    scope.route({
      method: ['GET', 'PUT', 'DELETE', 'PATCH'],
      url: '/v1/responses',
      handler: notServed,
      config: { api: 'responses' },
    });
    registerRetrieve(scope, state);
    // Another worker's question for the items a request it serves names (gather.ts).
    scope.post(ITEMS_PATH, async (request, reply) => {
      const answer = itemsAsked(state, request);
      if (answer === undefined) return notServed(request);
      return reply.type('application/json; charset=utf-8').send(answer);
    });
    scope.all('/v1/responses/*', notServed);
    registerConversations(scope, state);
    scope.route({ method: ['GET', 'PUT', 'PATCH'], url: '/v1/conversations', handler: notServed });
    scope.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: '/v1/conversations/*',
      handler: notServed,
    });
  },
  output(reply, turn, state) {
    return new ResponsesSseOutput(
      reply,
      { 'x-request-id': reply.request.id, ...turn.droppedHeader },
      (turn.translator = new ResponsesTranslator(turn)),
      state.config.streamKeepAliveMs,
      turn.keep,
    );
  },
};
