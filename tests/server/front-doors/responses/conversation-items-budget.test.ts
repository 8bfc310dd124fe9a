/**
 * GET /v1/conversations/{id}/items' costs, x1 vs x4 (tests/support/cost-scaling.ts): a page of a
 * conversation of n turns, with an item deleted and an `after` cursor near its end (the listing
 * walks the conversation once, derives the ids of items sent without one, leaves the deleted out
 * and finds the cursor), costs about n in CPU and keeps about a page. Each run lists it anew (an
 * item deleted, then eight other conversations listed: the listing kept for the next page, at
 * most eight, is built again).
 */
import { describe, expect, it } from 'vitest';
import type { InputItem } from '../../../../protocol/responses/types.js';
import { listPage } from '../../../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../../../support/cost-scaling.js';
import { answer } from '../../../support/stored-calls.js';

const user = (i: number): InputItem => ({ type: 'message', role: 'user', content: `question ${i}` });

/** A conversation of `turns` turns (a question, an answer), its first question deleted. */
function conversation(turns: number): {
  store: ResponsesItemStore;
  after: string;
  ids: string[];
  runs: number;
} {
  const store = new ResponsesItemStore(1 << 30);
  store.openConversation('k', 'conv_1', [user(-1)]);
  for (let i = 0; i < turns; i++) {
    const id = `resp_${i}`;
    store.keepResponse('k', id, i === 0 ? undefined : `resp_${i - 1}`, [user(i)], [answer(i)], false);
    store.advanceConversation('k', 'conv_1', id);
  }
  const listed = store.listConversation('k', 'conv_1');
  if (listed.missing !== undefined) throw new Error(listed.missing);
  if (!store.deleteConversationItem('k', 'conv_1', listed.at(1).id)) throw new Error('not deleted');
  const ids = Array.from({ length: listed.length }, (_, k) => listed.at(k).id);
  for (let c = 0; c < 8; c++) store.openConversation('k', `conv_other_${c}`, [user(c)]);
  return { store, after: listed.at(Math.max(0, listed.length - 10)).id, ids, runs: 2 };
}

describe('conversation items: a page costs linear in the conversation', () => {
  it('a listing with a deleted item and a cursor near the end (x1 vs x4)', () => {
    const small = conversation(3);
    const listed = small.store.listConversation('k', 'conv_1');
    if (listed.missing !== undefined) throw new Error(listed.missing);
    expect(listed.length).toBe(6);
    const s = measureScaling(
      (n) => conversation(n),
      (input) => {
        const { store, after, ids } = input;
        store.deleteConversationItem('k', 'conv_1', ids[input.runs++]!);
        for (let c = 0; c < 8; c++) store.listConversation('k', `conv_other_${c}`);
        const found = store.listConversation('k', 'conv_1');
        if (found.missing !== undefined) throw new Error(found.missing);
        return listPage(found, { order: 'asc', after, limit: '100' });
      },
      { from: 64, max: 65_536 },
    );
    const within = withinBudget(s, 5);
    expect(within.time, JSON.stringify(s)).toBe(true);
    expect(within.memory, JSON.stringify(s)).toBe(true);
  });
});
