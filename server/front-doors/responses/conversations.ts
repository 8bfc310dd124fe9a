/**
 * POST /v1/conversations and DELETE /v1/conversations/{id} (OpenAI's Conversations API, the part
 * a Responses client needs): a conversation is an id, the items it was created with, and its
 * latest response, kept in the Responses store (item-store.ts) under the API key that created it.
 * A request with `conversation` continues it (the Agents SDK's `conversationId`, the openai SDK's
 * `conversations.create` then `responses.create({conversation})`); before, each was refused (a
 * 400 on every turn) or relayed upstream (a 404 in the upstream's shape). Its items are listed,
 * retrieved and edited nowhere else: those routes answer 404 in the OpenAI shape.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ToolproofError } from '../../../protocol/errors.js';
import { isObject } from '../../../protocol/is-object.js';
import { inputToMessages } from '../../../protocol/responses/items.js';
import type { InputItem } from '../../../protocol/responses/types.js';
import type { AppState } from '../../app-state.js';

const MAX_CREATE_ITEMS = 20;

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** The items a new conversation starts with: checked as a request's input would be. */
function itemsOf(body: unknown): InputItem[] {
  const items = isObject(body) ? body.items : undefined;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw invalid('items', 'items must be an array of items.');
  // OpenAI's limit: a conversation starts with up to 20 items; later ones come with its responses.
  if (items.length > MAX_CREATE_ITEMS)
    throw invalid('items', `items: at most ${MAX_CREATE_ITEMS} items when a conversation is created.`);
  try {
    inputToMessages(items as InputItem[]);
  } catch (err) {
    if (err instanceof ToolproofError && typeof err.param === 'string' && err.param.startsWith('input'))
      throw invalid(`items${err.param.slice('input'.length)}`, err.message.replaceAll('input[', 'items['));
    throw err;
  }
  return items as InputItem[];
}

export function registerConversations(scope: FastifyInstance, state: AppState): void {
  const scopeOf = (request: FastifyRequest) => request.tpKey?.key ?? '';
  const storeOf = () => {
    const store = state.responsesStore;
    if (!store)
      throw new ToolproofError('TP_ERR_NOT_FOUND', {
        message:
          "Conversations are not served: this toolproof's Responses store is off (TOOLPROOF_RESPONSES_STORE_MB=0). Send the whole conversation in `input` instead.",
      });
    return store;
  };
  scope.post('/v1/conversations', { config: { api: 'responses' } }, async (request, reply) => {
    const store = storeOf();
    const items = itemsOf(request.body);
    const metadata = isObject(request.body) && isObject(request.body.metadata) ? request.body.metadata : {};
    const id = `conv_${randomBytes(24).toString('hex')}`;
    if (!store.openConversation(scopeOf(request), id, items))
      throw new ToolproofError('TP_ERR_BODY_TOO_LARGE', {
        param: 'items',
        message: 'items: larger than the whole Responses store (TOOLPROOF_RESPONSES_STORE_MB).',
      });
    return reply.send({ id, object: 'conversation', created_at: Math.floor(Date.now() / 1000), metadata });
  });
  scope.delete<{ Params: { id: string } }>(
    '/v1/conversations/:id',
    { config: { api: 'responses' } },
    async (request, reply) => {
      const { id } = request.params;
      if (!storeOf().closeConversation(scopeOf(request), id))
        throw new ToolproofError('TP_ERR_NOT_FOUND', {
          message: `Conversation ${JSON.stringify(id.slice(0, 200))} is not held by this toolproof.`,
        });
      return reply.send({ id, object: 'conversation.deleted', deleted: true });
    },
  );
}
