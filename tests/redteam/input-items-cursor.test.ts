/**
 * GET /v1/responses/{id}/input_items with a cursor (`after`) or `order=asc` (redteam29 left it):
 * such a page built the response's listing whole (every turn of its previous_response_id chain
 * parsed, an id derived per item) and kept it among 8; a client cycling through 9 responses of
 * long chains, a page each, paid the whole chain on every request. A page of a clean chain now
 * reads only the turns it shows, found by jumps along the chain, its cursor's place read from
 * the id. x1 vs x4 chain length (tests/support/cost-scaling.ts) in the store; the real server's
 * pages through the openai SDK.
 */
import OpenAI from 'openai';
import { describe, expect, it, vi } from 'vitest';
import { listPage } from '../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { compareCosts, cpuMsOf } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';
import { answer, chainThroughSdk, toolOutput } from '../support/stored-calls.js';

const output = toolOutput;

/** Nine chains of `turns` responses each (ten items brought, one answer each), in one store. */
function nineChains(turns: number): ResponsesItemStore {
  const store = new ResponsesItemStore(1 << 30);
  for (let c = 0; c < 9; c++)
    for (let t = 0; t < turns; t++)
      store.keepResponse(
        'k',
        `resp_${c}_${t}`,
        t === 0 ? undefined : `resp_${c}_${t - 1}`,
        Array.from({ length: 10 }, (_, j) => output(10 * t + j)),
        [answer(c * turns + t)],
        false,
        { envelope: '{}' },
      );
  return store;
}

/** Three rounds over the nine chains' last responses: an asc page, then a page after a cursor in its middle. */
function cycle(store: ResponsesItemStore, turns: number): number {
  let seen = 0;
  for (let round = 0; round < 3; round++)
    for (let c = 0; c < 9; c++) {
      const id = `resp_${c}_${turns - 1}`;
      const asc = listPage(store.inputItemsPaged('k', id)!, { order: 'asc', limit: '20' });
      const middle = listPage(store.inputItemsPaged('k', id)!, { limit: '1', after: asc.last_id! });
      const after = listPage(store.inputItemsPaged('k', id)!, {
        order: 'asc',
        limit: '20',
        after: asc.last_id!,
      });
      seen += asc.data.length + middle.data.length + after.data.length;
    }
  return seen;
}

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

describe("a response's input items paged with a cursor or from the oldest", () => {
  it('nine responses of 4x longer chains, cycled through a page each, cost the same (x1 vs x4)', () => {
    const cost = (turns: number) => {
      const store = nineChains(turns);
      return cpuMsOf(() => expect(cycle(store, turns)).toBe(27 * 41));
    };
    const c = compareCosts(
      () => cost(500),
      () => cost(2_000),
      (a, b) => b <= 2 * a + 2,
    );
    console.log('cycled pages, 5.5k vs 22k items a chain', JSON.stringify(c));
    // Before: each page built its chain whole (8 listings kept, 9 cycled): x4 the items, ~x4 the time.
    expect(c.ok, JSON.stringify(c)).toBe(true);
  }, 120_000);

  it('through the real server: an asc page and a cursor read the turns they show, as the whole chain lists them', async () => {
    const client = new OpenAI({ apiKey: 'none', baseURL: `${pair.proxy.origin}/v1`, maxRetries: 0 });
    const prev = await chainThroughSdk(client, 40);
    const parse = vi.spyOn(JSON, 'parse');
    const asc = await client.responses.inputItems.list(prev, { order: 'asc', limit: 4 });
    const afterAsc = parse.mock.calls.length;
    // A cursor in the middle of the chain, read both ways.
    const middle = await client.responses.inputItems.list(prev, {
      order: 'asc',
      limit: 3,
      after: asc.data[2]!.id!,
    });
    const back = await client.responses.inputItems.list(prev, { limit: 3, after: asc.data[3]!.id! });
    const parsed = parse.mock.calls.length;
    parse.mockRestore();
    const shown = (page: typeof asc) => page.data.map((x) => (x as { call_id?: string }).call_id ?? x.type);
    expect(shown(asc)).toEqual(['call_0', 'call_1', 'message', 'call_2']);
    expect(shown(middle)).toEqual(['call_2', 'call_3', 'message']);
    expect(shown(back)).toEqual(['message', 'call_1', 'call_0']);
    expect(back.has_more).toBe(false);
    // Before: the chain's 40 turns and 39 answers parsed for the first page (then kept).
    expect(afterAsc).toBeLessThan(15);
    expect(parsed).toBeLessThan(30);
  });
});
