/**
 * POST /v1/messages (Anthropic Messages API) and /v1/messages/count_tokens. The request is
 * translated to chat completions at the edge (protocol/anthropic/), runs through the one chat
 * pipeline unchanged, and the answer is translated back, as a message or as Anthropic stream
 * events (output.ts). Every route of the door answers errors in Anthropic's shape
 * (registerFrontDoor gives it a scope of its own); GET /v1/models answers Anthropic's clients in
 * their page shape.
 */
import type { FastifyRequest } from 'fastify';
import { type MessageContext, messageId, toMessage } from '../../../protocol/anthropic/response.js';
import { translateRequest } from '../../../protocol/anthropic/request.js';
import type { MessagesRequest } from '../../../protocol/anthropic/types.js';
import { ToolproofError } from '../../../protocol/errors.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import type { ChatCall } from '../../chat/context.js';
import { startTranslatedCall } from '../../chat/start.js';
import { normalizeError } from '../../error-handler.js';
import type { FrontDoor, ModelEntry } from '../types.js';
import { anthropicErrorBody, messagesErrorEvent } from './errors.js';
import { registerCountTokens } from './count-tokens.js';
import { MessagesSseOutput } from './output.js';
import { messagesBody } from './schema.js';

/** What a Messages request keeps to its answer: the message's context, and its chat call. */
interface MessagesTurn extends MessageContext {
  call: ChatCall;
  /** The dropped-tools header, which a stream writes itself. */
  droppedHeader: Record<string, string>;
}

/**
 * The rest of the Messages API (batches, models under this path, another method on
 * /v1/messages) is not served: a 404 in Anthropic's shape, instead of falling through to the
 * upstream, which would answer in its own shape (vLLM: {"detail": "Not Found"}).
 */
async function notServed(request: FastifyRequest): Promise<never> {
  throw new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Not served by toolproof's Messages API: ${request.method} ${request.url.split('?')[0]}.`,
  });
}

/**
 * Unix seconds as Anthropic's RFC 3339 date, or undefined for what is no date: an upstream's
 * `created` may be anything (a string, 1e20 or 1e400, past what a Date holds).
 */
function isoDate(seconds: unknown): string | undefined {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return undefined;
  const date = new Date(Math.floor(seconds) * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/**
 * A model in Anthropic's shape: type, display_name and created_at, added beside the OpenAI
 * fields, so either client reads the same answer.
 */
function anthropicModel(m: ModelEntry, created: number): ModelEntry {
  return {
    ...m,
    type: 'model',
    display_name: m.id,
    // Anthropic's Models API names the context window max_input_tokens.
    ...(typeof m.context_window === 'number' ? { max_input_tokens: m.context_window } : {}),
    created_at: isoDate(m.created) ?? isoDate(created),
  };
}

/** Anthropic Messages: Anthropic's error shape on every route of the door, its own models page. */
export const messages: FrontDoor<'messages', MessagesTurn> = {
  api: 'messages',
  path: '/v1/messages',
  schema: {
    summary:
      'Create a message (Anthropic Messages API), run through the same forced tool use, leak recovery and history repair as chat.',
    tags: ['anthropic'],
    body: messagesBody,
  },
  errorBody: anthropicErrorBody,
  errorEvent: messagesErrorEvent,
  open(request, reply, state) {
    const body = request.body as MessagesRequest;
    const { call, droppedHeader } = startTranslatedCall(
      request,
      reply,
      state,
      'messages',
      (b: MessagesRequest) => translateRequest(b),
    );
    // Anthropic SDKs expose this header as the response's request id.
    reply.header('request-id', request.id);
    return {
      id: messageId(request.id),
      model: body.model,
      ...(Array.isArray(body.stop_sequences) ? { stopSequences: body.stop_sequences } : {}),
      call,
      droppedHeader,
    };
  },
  callOf: (turn) => turn.call,
  answer(reply, result, turn) {
    if (result.kind === 'raw') {
      // Unreachable: only chat requests are relayed untouched. Kept as a guard.
      throw normalizeError(new Error('raw result on /v1/messages'));
    }
    // stringifyJson: a tool_use input keeps the numbers and key order the model wrote.
    return reply
      .type('application/json; charset=utf-8')
      .send(stringifyJson(toMessage(result.completion, turn)));
  },
  output(reply, turn, state) {
    const id = reply.request.id;
    return new MessagesSseOutput(
      reply,
      { 'x-request-id': id, 'request-id': id, ...turn.droppedHeader },
      turn,
      state.config.streamKeepAliveMs,
    );
  },
  routes(scope, state) {
    registerCountTokens(scope, state);
    scope.route({
      method: ['GET', 'PUT', 'DELETE', 'PATCH'],
      url: '/v1/messages',
      handler: notServed,
      config: { api: 'messages' },
    });
    scope.all('/v1/messages/*', notServed);
  },
  models: {
    // Anthropic's SDKs always send anthropic-version.
    claims: (request) => request.headers['anthropic-version'] !== undefined,
    // Anthropic's page shape: type, display_name and created_at per model, has_more / first_id /
    // last_id. Added beside the OpenAI fields, so either client reads the same answer.
    page(list, created) {
      const models = list.map((m) => anthropicModel(m, created));
      return {
        object: 'list',
        data: models,
        has_more: false,
        first_id: models[0]?.id ?? null,
        last_id: models.at(-1)?.id ?? null,
      };
    },
    model: anthropicModel,
  },
};
