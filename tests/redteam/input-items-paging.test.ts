/**
 * GET /v1/responses/{id}/input_items paged to the end (the openai SDK's
 * responses.inputItems.list auto-paginated, `after` = the last page's `last_id`): each page read
 * the response's whole previous_response_id chain again (every turn's JSON parsed, an id derived
 * for each item sent without one) and scanned it for the cursor, so reading it all cost pages x
 * chain, as conversation pages did before their listing was kept (conversation-paging.test.ts).
 * The listing is now kept between pages beside the conversations', dropped when a turn of the
 * chain is. x1 vs x4 (tests/support/cost-scaling.ts) in the store; the real server's pages.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { InputItem } from '../../protocol/responses/types.js';
import { listPage } from '../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';
import { answer } from '../support/stored-calls.js';

const output = (i: number): InputItem =>
  ({ type: 'function_call_output', call_id: `call_${i}`, output: `result ${i}` }) as InputItem;

/** A chain of `turns` responses, ten items brought and one answer each; the last one's id. */
function chain(turns: number): { store: ResponsesItemStore; last: string } {
  const store = new ResponsesItemStore(1 << 30);
  for (let t = 0; t < turns; t++)
    store.keepResponse(
      'k',
      `resp_${t}`,
      t === 0 ? undefined : `resp_${t - 1}`,
      Array.from({ length: 10 }, (_, j) => output(10 * t + j)),
      [answer(t)],
      false,
      { envelope: '{}' },
    );
  return { store, last: `resp_${turns - 1}` };
}

/** Every page, oldest first: how many items were read. */
function readAll(store: ResponsesItemStore, id: string): number {
  let seen = 0;
  let after: string | undefined;
  for (;;) {
    const found = store.inputItems('k', id);
    if (!found) throw new Error('not held');
    const page = listPage(found, { order: 'asc', limit: '100', ...(after ? { after } : {}) });
    seen += page.data.length;
    if (!page.has_more) return seen;
    after = page.last_id!;
  }
}

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

describe("a response's input items read to their end, page by page", () => {
  it('through the real server: every item once, in order, and a turn of the chain deleted ends it', async () => {
    const client = new OpenAI({ apiKey: 'none', baseURL: `${pair.proxy.origin}/v1`, maxRetries: 0 });
    let prev: string | undefined;
    const ids: string[] = [];
    for (let t = 0; t < 4; t++) {
      const res = await client.responses.create({
        model: 'm1',
        input: Array.from({ length: 3 }, (_, j) => output(3 * t + j)) as never,
        ...(prev ? { previous_response_id: prev } : {}),
      });
      ids.push(res.id);
      prev = res.id;
    }
    const seen: string[] = [];
    for await (const item of client.responses.inputItems.list(prev!, { order: 'asc', limit: 2 }))
      seen.push((item as { call_id?: string }).call_id ?? item.type);
    // Each turn's three outputs, then the answer (a message), but the last turn's answer.
    const expected: string[] = [];
    for (let t = 0; t < 4; t++) {
      for (let j = 0; j < 3; j++) expected.push(`call_${3 * t + j}`);
      if (t < 3) expected.push('message');
    }
    expect(seen).toEqual(expected);
    // The second turn deleted: only the last response's own input is listed (as before a listing was kept).
    await client.responses.delete(ids[1]!);
    const rest: string[] = [];
    for await (const item of client.responses.inputItems.list(prev!, { order: 'asc', limit: 2 }))
      rest.push((item as { call_id?: string }).call_id ?? item.type);
    expect(rest).toEqual(['call_9', 'call_10', 'call_11']);
  });

  it('costs about the chain, not pages x chain (x1 vs x4)', () => {
    const s = measureScaling(chain, ({ store, last }) => readAll(store, last), { from: 50, max: 64_000 });
    console.log('input items paging', JSON.stringify(s));
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 120_000);
});
