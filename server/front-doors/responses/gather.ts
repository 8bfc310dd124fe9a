/**
 * TOOLPROOF_WORKERS > 1: a Responses request whose item_references name items kept on several
 * workers (a turn that carried no reference landed on another worker: @ai-sdk/openai's default
 * store: true) is served by one worker, the one holding its first named state (worker-relay.ts).
 * The items the others hold are asked of them (POST ITEMS_PATH on their private socket, with the
 * client's own key headers: a worker answers only the items that key got) and placed in `input`
 * where their references stood, before the request is served. Bounded as references are with one
 * worker: the items placed, each time one is named, come to at most the body limit (a 413 past
 * it), with the body too when the request is relayed (the worker serving it reads it within its
 * body limit), and where it is served with the items it resolves itself and the conversation it
 * continues (request.tpPlaced, relayed.ts placedBytes); a worker that does not answer within
 * ASK_WAIT_MS leaves its references as they are, so they become the note a missing item becomes.
 */
import type { FastifyRequest } from 'fastify';
import { isObject } from '../../../protocol/is-object.js';
import { stringifyJson } from '../../../protocol/lossless-json.js';
import { ToolproofError } from '../../../protocol/errors.js';
import type { AppState } from '../../app-state.js';
import { relayedHere } from '../../relayed.js';
import type { WorkerRelay } from '../../worker-relay.js';

/** A worker's question to another: the items named (only on the private socket). */
export const ITEMS_PATH = '/v1/responses/_worker/items';

/** Its answer: each item held under the asking key, as [id, item], and whether more passed the limit. */
interface ItemsAnswer {
  items: [string, unknown][];
  over: boolean;
}

const isAnswer = (a: unknown): a is ItemsAnswer =>
  isObject(a) && Array.isArray(a.items) && typeof a.over === 'boolean';

export function tooLarge(limitBytes: number): ToolproofError {
  return new ToolproofError('TP_ERR_BODY_TOO_LARGE', {
    param: 'input',
    message: `The conversation previous_response_id continues and the items input refers to by item_reference come to more than the body limit (${limitBytes} bytes), as if they had been sent whole.`,
  });
}

/** The referenced ids of `input`, each once. */
function referenced(input: unknown[]): Set<string> {
  const ids = new Set<string>();
  for (const item of input)
    if (isObject(item) && item.type === 'item_reference' && typeof item.id === 'string') ids.add(item.id);
  return ids;
}

/** The door's GatherHeld (worker-relay.ts): the items other workers hold, placed in `input`. */
export function gatherItems(state: AppState) {
  return async (request: FastifyRequest, relay: WorkerRelay, target: number | undefined): Promise<void> => {
    const store = state.responsesStore;
    const body = request.body;
    if (!store || !isObject(body) || !Array.isArray(body.input)) return;
    const scope = request.tpKey?.key ?? '';
    const limit = state.config.bodyLimitBytes;
    const asked = new Map<number, string[]>();
    const found = new Map<string, string>();
    for (const id of referenced(body.input)) {
      const worker = relay.ownerOf(id);
      if (worker !== undefined && worker !== target) {
        const ids = asked.get(worker);
        if (ids) ids.push(id);
        else asked.set(worker, [id]);
      } else if (target !== undefined && relay.mine(id)) {
        // Relayed to the worker holding the first: this one's items go with it.
        const json = store.lookupJson(scope, id);
        if (json !== undefined) found.set(id, json);
      }
    }
    if (asked.size === 0 && found.size === 0) return;
    const answers = await Promise.all(
      [...asked].map(([worker, ids]) =>
        relay.ask(request, worker, ITEMS_PATH, JSON.stringify({ ids }), limit + 64 * 1024),
      ),
    );
    for (const answer of answers) {
      if (!isAnswer(answer)) continue;
      if (answer.over) throw tooLarge(limit);
      for (const pair of answer.items)
        if (Array.isArray(pair) && typeof pair[0] === 'string') found.set(pair[0], JSON.stringify(pair[1]));
    }
    if (found.size === 0) return;
    // Each time an item is named it counts, as with one worker: a few bytes of references to one
    // large item never expand past the limit.
    // Relayed, with the body too: the worker serving it reads it within its body limit.
    const body0 = target === undefined ? 0 : (request.rawBody?.byteLength ?? 0);
    let placedBytes = 0;
    const resolved = state.metrics.responsesItemReferences.labels('resolved');
    const input = body.input.map((item) => {
      const json =
        isObject(item) && item.type === 'item_reference' ? found.get(item.id as string) : undefined;
      if (json === undefined) return item;
      placedBytes += json.length;
      if (body0 + placedBytes > limit) throw tooLarge(limit);
      resolved.inc();
      return JSON.parse(json) as unknown;
    });
    const placed = { ...body, input };
    request.body = placed;
    if (target !== undefined) request.rawBody = Buffer.from(stringifyJson(placed, body));
    // Where it is served (here, or told the worker it is relayed to: relayed.ts placedBytes), the
    // door counts them with the references it resolves and the conversation it continues: they
    // counted apart, each up to the limit (two items of 40 KB under a 64 KB limit, one on each
    // worker, went upstream where one worker answers a 413).
    request.tpPlaced = placedBytes;
  };
}

/**
 * POST ITEMS_PATH, on the private socket only (a 404 elsewhere): the items named by `ids` that
 * the asking key got from this worker, in order, until the body limit.
 */
export function itemsAsked(state: AppState, request: FastifyRequest): string | undefined {
  if (!relayedHere(request)) return undefined;
  // A worker's question, not a client's request: counted by the asking worker
  // (toolproof_responses_relayed_total), not as the key's request here.
  request.tpRelayed = 0;
  const ids = isObject(request.body) ? request.body.ids : undefined;
  const store = state.responsesStore;
  const scope = request.tpKey?.key ?? '';
  const limit = state.config.bodyLimitBytes;
  const pairs: string[] = [];
  let bytes = 0;
  let over = false;
  if (store && Array.isArray(ids))
    for (const id of new Set(ids)) {
      if (typeof id !== 'string') continue;
      const json = store.lookupJson(scope, id);
      if (json === undefined) continue;
      bytes += json.length;
      if (bytes > limit) {
        over = true;
        break;
      }
      pairs.push(`[${JSON.stringify(id)},${json}]`);
    }
  return `{"items":[${pairs.join(',')}],"over":${over}}`;
}
