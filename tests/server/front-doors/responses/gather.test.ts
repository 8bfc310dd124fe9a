/**
 * The items other workers hold, placed where a request's item_references name them
 * (server/front-doors/responses/gather.ts), in process: a worker's answer (itemsAsked) over a real
 * item store, the placing over a relay whose `ask` is that answer. Bounded as one worker's
 * references are: an item named again and again counts each time against the body limit (a 413
 * past it, not the body grown), only the asking key's items are answered, and x1 vs x4
 * references cost about x4 (tests/support/cost-scaling.ts).
 */
import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { OutputItem } from '../../../../protocol/responses/types.js';
import type { AppState } from '../../../../server/app-state.js';
import { gatherItems, itemsAsked } from '../../../../server/front-doors/responses/gather.js';
import { ResponsesItemStore } from '../../../../server/front-doors/responses/item-store.js';
import { markRelayed } from '../../../../server/relayed.js';
import type { WorkerRelay } from '../../../../server/worker-relay.js';
import { measureScalingAsync, withinBudget } from '../../../support/cost-scaling.js';

const counter = { labels: () => ({ inc() {} }) };
const stateOf = (store: ResponsesItemStore, limit: number) =>
  ({
    responsesStore: store,
    config: { bodyLimitBytes: limit },
    metrics: { responsesItemReferences: counter },
  }) as unknown as AppState;

/** An assistant message kept on "worker 2" under `scope`, its text `text`. */
const message = (id: string, text: string) =>
  ({
    type: 'message',
    id,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  }) as unknown as OutputItem;

/** Worker 2's store with `n` items (msg_0002...), and a relay whose ask is worker 2's answer. */
function twoWorkers(n: number, text = 'x', limit = 1 << 24) {
  const store = new ResponsesItemStore(1 << 30);
  const ids = Array.from({ length: n }, (_, i) => `msg_0002${String(i).padStart(20, '0')}`);
  store.keepResponse(
    'alice',
    'resp_0002aa',
    undefined,
    [],
    ids.map((id) => message(id, text)),
  );
  const there = stateOf(store, limit);
  const socket = {} as Socket;
  markRelayed(socket);
  const relay = {
    ownerOf: (id: string) => (id.startsWith('msg_0002') ? 2 : undefined),
    mine: () => false,
    ask: async (request: FastifyRequest, _worker: number, _path: string, payload: string) => {
      const asked = { socket, body: JSON.parse(payload), tpKey: request.tpKey } as unknown as FastifyRequest;
      return JSON.parse(itemsAsked(there, asked)!);
    },
  } as unknown as WorkerRelay;
  const here = stateOf(new ResponsesItemStore(1 << 20), limit);
  return { ids, relay, here };
}

const requestNaming = (ids: string[], key: string) =>
  ({
    body: { model: 'm', input: ids.map((id) => ({ type: 'item_reference', id })) },
    tpKey: { key, name: key },
  }) as unknown as FastifyRequest;

describe('items another worker holds, placed in the request', () => {
  it("are the asking key's only, each placed where it is named", async () => {
    const { ids, relay, here } = twoWorkers(2, 'kept text');
    const alice = requestNaming([ids[1]!, 'msg_0003ffff', ids[0]!], 'alice');
    await gatherItems(here)(alice, relay, undefined);
    const input = (alice.body as { input: { type: string; id: string }[] }).input;
    expect(input.map((i) => [i.type, i.id])).toEqual([
      ['message', ids[1]],
      ['item_reference', 'msg_0003ffff'],
      ['message', ids[0]],
    ]);
    const bob = requestNaming(ids, 'bob');
    await gatherItems(here)(bob, relay, undefined);
    expect((bob.body as { input: { type: string }[] }).input.map((i) => i.type)).toEqual([
      'item_reference',
      'item_reference',
    ]);
  });

  it('an item named again and again counts each time: past the body limit a 413, the body not grown', async () => {
    const { ids, relay, here } = twoWorkers(1, 'y'.repeat(10_000), 100_000);
    const request = requestNaming(Array(20).fill(ids[0]), 'alice');
    await expect(gatherItems(here)(request, relay, undefined)).rejects.toMatchObject({
      code: 'TP_ERR_BODY_TOO_LARGE',
    });
    expect((request.body as { input: { type: string }[] }).input[0]!.type).toBe('item_reference');
  });

  it('x1 vs x4 references cost about x4', async () => {
    const s = await measureScalingAsync(
      (n) => twoWorkers(n),
      async ({ ids, relay, here }) => {
        const request = requestNaming(ids, 'alice');
        await gatherItems(here)(request, relay, undefined);
        return request;
      },
      { from: 64, max: 1 << 16 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
