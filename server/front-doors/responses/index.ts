/**
 * POST /v1/responses (OpenAI Responses API, no stored responses; the output items it returned
 * are kept, bounded, for item_reference: item-store.ts). The request is translated into a chat
 * completion at the edge (protocol/responses/), runs through the one chat pipeline (forced
 * final_answer, fallback, history repair, leak recovery, validation, corrective retry), and
 * the answer is translated back: a response object, or the Responses event stream (output.ts).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ToolproofError } from '../../../protocol/errors.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import type { ItemLookup } from '../../../protocol/responses/items.js';
import { translateRequest } from '../../../protocol/responses/request.js';
import {
  completionToResponse,
  ResponsesTranslator,
  type TranslatorContext,
} from '../../../protocol/responses/stream.js';
import type { OutputItem, ResponsesRequest } from '../../../protocol/responses/types.js';
import type { AppState } from '../../app-state.js';
import type { ChatCall } from '../../chat/context.js';
import { startTranslatedCall } from '../../chat/start.js';
import { openAIErrorBody } from '../chat/errors.js';
import type { FrontDoor } from '../types.js';
import { responsesErrorEvent } from './errors.js';
import type { ResponsesItemStore } from './item-store.js';
import { ResponsesSseOutput } from './output.js';
import { responsesBody } from './schema.js';

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** What a Responses request keeps to its answer: the translator's context, and its chat call. */
interface ResponsesTurn extends TranslatorContext {
  call: ChatCall;
  /** The dropped-tools header, which a stream writes itself. */
  droppedHeader: Record<string, string>;
  /** The stream's translator, once output() opened one (its failure continues its sequence). */
  translator?: ResponsesTranslator;
  /** Keeps the answer's output items for item_reference; absent when they are not kept. */
  keep?: (output: readonly OutputItem[]) => void;
}

/**
 * The rest of the Responses API (retrieve, delete, cancel, input_items, input_tokens, compact)
 * needs stored responses, which a stateless proxy has none of: a 404 in the OpenAI shape, instead
 * of falling through to the upstream, which answered in its own (vLLM: {"detail": "Not Found"})
 * about ids it never issued.
 */
async function notServed(request: FastifyRequest): Promise<never> {
  throw new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Not served by toolproof's Responses API (stateless: no stored responses): ${request.method} ${request.url.split('?')[0]}.`,
  });
}

/**
 * item_reference -> the item kept under `scope`. Bounded per request by the body limit: a few KB
 * of references to one large item would otherwise expand into gigabytes of prompt.
 */
function resolver(
  store: ResponsesItemStore,
  scope: string,
  limitBytes: number,
  counted: AppState['metrics']['responsesItemReferences'],
): ItemLookup {
  let total = 0;
  return (id) => {
    const found = store.lookup(scope, id);
    counted.labels(found ? 'resolved' : 'missing').inc();
    if (!found) return undefined;
    total += found.bytes;
    if (total > limitBytes)
      throw new ToolproofError('TP_ERR_BODY_TOO_LARGE', {
        param: 'input',
        message: `The items input refers to by item_reference come to more than the body limit (${limitBytes} bytes), as if they had been sent whole.`,
      });
    return found.item;
  };
}

export const responses: FrontDoor<'responses', ResponsesTurn> = {
  api: 'responses',
  path: '/v1/responses',
  schema: {
    summary:
      'Create a model response (OpenAI Responses API, stateless), with forced tool use, leak recovery and history repair.',
    tags: ['openai'],
    body: responsesBody,
  },
  errorBody: openAIErrorBody,
  errorEvent: (err, turn) => responsesErrorEvent(err, (turn.translator ??= new ResponsesTranslator(turn))),
  open(request, reply, state) {
    const store = state.responsesStore;
    // Scoped to the key that presented it: another key's reference does not resolve.
    const scope = request.tpKey?.key ?? '';
    const lookup = store
      ? resolver(store, scope, state.config.bodyLimitBytes, state.metrics.responsesItemReferences)
      : undefined;
    const { call, translated, droppedHeader } = startTranslatedCall(
      request,
      reply,
      state,
      'responses',
      (b: ResponsesRequest) => translateRequest(b, lookup),
    );
    const body = request.body as ResponsesRequest;
    const stored = store !== undefined && body.store !== false;
    return {
      request: body,
      newId,
      createdAt: Math.floor(Date.now() / 1000),
      catalog: translated.catalog,
      call,
      droppedHeader,
      stored,
      ...(stored ? { keep: (output: readonly OutputItem[]) => store.keep(scope, output) } : {}),
    };
  },
  callOf: (turn) => turn.call,
  answer(reply, result, turn) {
    // Only chat requests are relayed raw; a translated request always gets a completion.
    if (result.kind !== 'completion')
      throw new ToolproofError('TP_ERR_INTERNAL', { message: 'responses: unexpected raw chat result' });
    const response = completionToResponse(result.completion, turn, result.usage);
    turn.keep?.(response.output);
    return reply.type('application/json; charset=utf-8').send(stringifyJson(response));
  },
  routes(scope) {
    scope.route({
      method: ['GET', 'PUT', 'DELETE', 'PATCH'],
      url: '/v1/responses',
      handler: notServed,
      config: { api: 'responses' },
    });
    scope.all('/v1/responses/*', notServed);
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
