/**
 * POST /v1/conversations and DELETE /v1/conversations/{id} (OpenAI's Conversations API, the part
 * a Responses client needs): a conversation is an id, the items it was created with, and its
 * latest response, kept in the Responses store (item-store.ts) under the API key that created it.
 * A request with `conversation` continues it (the Agents SDK's `conversationId`, the openai SDK's
 * `conversations.create` then `responses.create({conversation})`); before, each was refused (a
 * 400 on every turn) or relayed upstream (a 404 in the upstream's shape).
 * GET and POST /v1/conversations/{id} (retrieve, update its metadata) and .../items (list, add,
 * retrieve and delete one) serve the same conversation: the Agents SDK's
 * OpenAIConversationsSession keeps a session's history there (items.create after each run,
 * items.list before the next, items.delete for popItem); before, each answered 404.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ToolproofError } from '../../../protocol/errors.js';
import { isObject } from '../../../protocol/is-object.js';
import { inputToMessages } from '../../../protocol/responses/items.js';
import type { InputItem } from '../../../protocol/responses/types.js';
import type { AppState } from '../../app-state.js';
import { stateId } from '../../worker-relay.js';
import type { Listed, Listing } from './kept-listing.js';

const MAX_CREATE_ITEMS = 20;

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/**
 * The items a new conversation starts with, or that POST .../items adds: checked as a request's
 * input would be. `capped`: at most 20 (OpenAI's limit on a new conversation's). Added items
 * are not capped but by the body limit and the store's budget: the Agents SDK's session adds a
 * whole run's items in one request (a tool loop of ten calls is past 20), and a refusal there
 * ended the session.
 */
function itemsOf(body: unknown, capped = true): InputItem[] {
  const items = isObject(body) ? body.items : undefined;
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw invalid('items', 'items must be an array of items.');
  if (capped && items.length > MAX_CREATE_ITEMS)
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

/** OpenAI's bounds on metadata: 16 pairs, keys of at most 64 characters, values of at most 512. */
const METADATA_PAIRS = 16;
const METADATA_KEY_CHARS = 64;
const METADATA_VALUE_CHARS = 512;

/**
 * Conversation metadata as sent, within OpenAI's bounds (16 string pairs, keys up to 64
 * characters, values up to 512); else a 400 naming the pair. Before, any object was kept as
 * sent (nested, megabytes) and read back whole on every GET of the conversation.
 */
function metadataOf(body: unknown, required: boolean): Record<string, string> {
  const metadata = isObject(body) ? body.metadata : undefined;
  const bounds = `an object of up to ${METADATA_PAIRS} string pairs (keys up to ${METADATA_KEY_CHARS} characters, values up to ${METADATA_VALUE_CHARS})`;
  if (metadata === undefined || metadata === null) {
    if (required) throw invalid('metadata', `metadata: ${bounds} is required.`);
    return {};
  }
  if (!isObject(metadata)) throw invalid('metadata', `metadata must be ${bounds}.`);
  let pairs = 0;
  for (const key in metadata) {
    if (!Object.hasOwn(metadata, key)) continue;
    if (++pairs > METADATA_PAIRS)
      throw invalid('metadata', `metadata must be ${bounds}: more than ${METADATA_PAIRS} pairs.`);
    const value = metadata[key];
    const shown = JSON.stringify(key.slice(0, METADATA_KEY_CHARS));
    if (key.length > METADATA_KEY_CHARS)
      throw invalid('metadata', `metadata must be ${bounds}: the key ${shown}... is longer.`);
    if (typeof value !== 'string' || value.length > METADATA_VALUE_CHARS)
      throw invalid(
        `metadata.${key}`,
        `metadata must be ${bounds}: the value of ${shown} is ${typeof value !== 'string' ? 'not a string' : 'longer'}.`,
      );
  }
  return metadata as Record<string, string>;
}

/** A body that is not an object (an array, a string, null): a 400, as a Responses request's is. */
function objectBody(body: unknown): void {
  if (body !== undefined && !isObject(body)) throw invalid('body', 'The request body must be a JSON object.');
}

/**
 * A conversation item as OpenAI lists it: with its id, a message's string content as one part
 * (the Agents SDK's session maps over `content`: a string was a TypeError), `type` and `status`
 * on a message.
 */
function listed({ id, item }: Listed): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(item as unknown as Record<string, unknown>), id };
  if (out.type === undefined && typeof out.role === 'string') out.type = 'message';
  if (out.type === 'message') {
    if (typeof out.content === 'string')
      out.content = [{ type: out.role === 'assistant' ? 'output_text' : 'input_text', text: out.content }];
    out.status ??= 'completed';
  }
  return out;
}

function page(data: Record<string, unknown>[], hasMore: boolean) {
  return {
    object: 'list',
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: hasMore,
  };
}

/**
 * A page of a conversation's items: `order` (desc by default, as OpenAI), `after` an item id,
 * `limit` 1-100 (20). Costs the page: the cursor is found by the listing's index.
 */
export function listPage(listing: Listing, query: Record<string, unknown>) {
  const order = query.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalid('order', "order must be 'asc' or 'desc'.");
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalid('limit', 'limit must be an integer from 1 to 100.');
  const n = listing.length;
  const at = (k: number) => listing.at(order === 'asc' ? k : n - 1 - k);
  let start = 0;
  if (typeof query.after === 'string' && query.after !== '') {
    const i = listing.indexOf(query.after);
    // An unknown cursor: past the end, an empty page.
    start = i < 0 ? n : (order === 'asc' ? i : n - 1 - i) + 1;
  }
  const data: Record<string, unknown>[] = [];
  for (let k = start; k < n && data.length < limit; k++) data.push(listed(at(k)));
  return page(data, start + data.length < n);
}

function tooLarge(): ToolproofError {
  return new ToolproofError('TP_ERR_BODY_TOO_LARGE', {
    param: 'items',
    message: 'items: larger than the whole Responses store (TOOLPROOF_RESPONSES_STORE_MB).',
  });
}

/** A conversation not held here: 404, as OpenAI answers an unknown one, saying why it may be gone. */
function notHeld(id: string): ToolproofError {
  return new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Conversation ${JSON.stringify(id.slice(0, 200))} is not held by this toolproof. Conversations are kept in the memory of the toolproof worker that created them (reached from any worker of the same toolproof), under the API key that created them, bounded by TOOLPROOF_RESPONSES_STORE_MB: one evicted, created on another replica, or before a restart of toolproof or of that worker is gone.`,
  });
}

function itemNotHeld(id: string): ToolproofError {
  return new ToolproofError('TP_ERR_NOT_FOUND', {
    message: `Item ${JSON.stringify(id.slice(0, 200))} is not in this conversation.`,
  });
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
    objectBody(request.body);
    const items = itemsOf(request.body);
    const metadata = metadataOf(request.body, false);
    const id = stateId('conv', 48);
    const created_at = Math.floor(Date.now() / 1000);
    if (!store.openConversation(scopeOf(request), id, items, { created_at, metadata })) throw tooLarge();
    return reply.send({ id, object: 'conversation', created_at, metadata });
  });
  type Params = { Params: { id: string; item?: string }; Querystring: Record<string, unknown> };
  const config = { config: { api: 'responses' as const } };
  /** The conversation object; a 404 when it is not held. */
  const conversationOf = (request: FastifyRequest<Params>) => {
    const { id } = request.params;
    const meta = storeOf().conversationMeta(scopeOf(request), id);
    if (!meta) throw notHeld(id);
    return { id, object: 'conversation', ...meta };
  };
  /** The conversation's items as listed; a 404 when it (or a turn of it) is not held. */
  const itemsOfHeld = (request: FastifyRequest<Params>) => {
    const found = storeOf().listConversation(scopeOf(request), request.params.id);
    if (found.missing !== undefined) throw notHeld(request.params.id);
    return found;
  };
  scope.get<Params>('/v1/conversations/:id', config, async (request) => conversationOf(request));
  scope.post<Params>('/v1/conversations/:id', config, async (request) => {
    objectBody(request.body);
    const metadata = metadataOf(request.body, true);
    if (!storeOf().updateConversation(scopeOf(request), request.params.id, metadata))
      throw notHeld(request.params.id);
    return conversationOf(request);
  });
  scope.get<Params>('/v1/conversations/:id/items', config, async (request) =>
    listPage(itemsOfHeld(request), request.query),
  );
  scope.post<Params>('/v1/conversations/:id/items', config, async (request) => {
    objectBody(request.body);
    const items = itemsOf(request.body, false);
    if (items.length === 0) throw invalid('items', 'items: at least one item.');
    const added = storeOf().addConversationItems(scopeOf(request), request.params.id, items);
    if (added.missing !== undefined) throw notHeld(request.params.id);
    if (added.tooLarge) throw tooLarge();
    return page(added.items.map(listed), false);
  });
  scope.get<Params>('/v1/conversations/:id/items/:item', config, async (request) => {
    const listing = itemsOfHeld(request);
    const k = listing.indexOf(request.params.item ?? '');
    if (k < 0) throw itemNotHeld(request.params.item ?? '');
    return listed(listing.at(k));
  });
  scope.delete<Params>('/v1/conversations/:id/items/:item', config, async (request) => {
    itemsOfHeld(request);
    if (!storeOf().deleteConversationItem(scopeOf(request), request.params.id, request.params.item ?? ''))
      throw itemNotHeld(request.params.item ?? '');
    return conversationOf(request);
  });
  scope.delete<{ Params: { id: string } }>(
    '/v1/conversations/:id',
    { config: { api: 'responses' } },
    async (request, reply) => {
      const { id } = request.params;
      if (!storeOf().closeConversation(scopeOf(request), id)) throw notHeld(id);
      return reply.send({ id, object: 'conversation.deleted', deleted: true });
    },
  );
}
