/**
 * GET /v1/conversations/{id}/items paged to the end, as the openai SDK's auto-pagination and the
 * Agents SDK's OpenAIConversationsSession read a conversation (`after` = the last page's
 * `last_id`): each page parsed the whole conversation again (every turn's JSON, a hash per item
 * sent without an id) and scanned it for the cursor, so a page of 100 cost the whole
 * conversation and reading it all cost pages x conversation. 160,000 items (10 MB, inside the
 * default 16 MB store): ~1 s of event loop per page, ~1,600 pages. x1 vs x4
 * (tests/support/cost-scaling.ts): reading it all now costs about its size.
 */
import { describe, expect, it } from 'vitest';
import type { InputItem } from '../../protocol/responses/types.js';
import { listPage } from '../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const output = (i: number): InputItem =>
  ({ type: 'function_call_output', call_id: `call_${i}`, output: `result ${i}` }) as InputItem;

/** A conversation of `n` items, added ten at a time (POST .../items). */
function conversation(n: number): ResponsesItemStore {
  const store = new ResponsesItemStore(1 << 30);
  store.openConversation('k', 'conv_1', []);
  for (let i = 0; i < n; i += 10)
    store.addConversationItems(
      'k',
      'conv_1',
      Array.from({ length: 10 }, (_, j) => output(i + j)),
    );
  return store;
}

/** Every page, oldest first, as a client pages it: the item count read. */
function readAll(store: ResponsesItemStore, order: 'asc' | 'desc' = 'asc'): string[] {
  const seen: string[] = [];
  let after: string | undefined;
  for (;;) {
    const found = store.listConversation('k', 'conv_1');
    if (found.missing !== undefined) throw new Error(found.missing);
    const page = listPage(found, { order, limit: '100', ...(after ? { after } : {}) });
    for (const item of page.data) seen.push(String((item as { call_id: string }).call_id));
    if (!page.has_more) return seen;
    after = page.last_id!;
  }
}

/** What the test reads of an answer. */
interface Page {
  data: Array<{ id: string; call_id?: string; role?: string }>;
  last_id: string;
}

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

describe('a conversation read to its end, page by page', () => {
  it('reads every item once, in order, either way', () => {
    const store = conversation(250);
    const asc = readAll(store);
    expect(asc).toEqual(Array.from({ length: 250 }, (_, i) => `call_${i}`));
    expect(readAll(store, 'desc')).toEqual([...asc].reverse());
  });

  it('a listing kept between pages follows a turn, an item deleted and a turn deleted (the real server)', async () => {
    const base = pair.proxy.origin;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, json: (await res.json()) as Page & { id: string } };
    };
    const conv = await call('POST', '/v1/conversations', {});
    const { id } = conv.json;
    await call('POST', `/v1/conversations/${id}/items`, {
      items: Array.from({ length: 5 }, (_, i) => output(i)),
    });
    const first = await call('GET', `/v1/conversations/${id}/items?order=asc&limit=2`);
    expect(first.json.data.map((d) => d.call_id)).toEqual(['call_0', 'call_1']);
    // A turn answered, then the page after the cursor: the answer is listed.
    const turn = await call('POST', '/v1/responses', { model: 'm1', conversation: id, input: 'go on' });
    expect(turn.status).toBe(200);
    const rest = await call(
      'GET',
      `/v1/conversations/${id}/items?order=asc&limit=100&after=${first.json.last_id}`,
    );
    const shown = rest.json.data.map((d) => d.call_id ?? d.role);
    expect(shown).toEqual(['call_2', 'call_3', 'call_4', 'user', 'assistant']);
    // An item deleted: gone from the next page, and from a lookup by its id.
    const gone = rest.json.data[0]!.id;
    expect((await call('DELETE', `/v1/conversations/${id}/items/${gone}`)).status).toBe(200);
    const after = await call(
      'GET',
      `/v1/conversations/${id}/items?order=asc&limit=100&after=${first.json.last_id}`,
    );
    expect(after.json.data).toHaveLength(4);
    expect((await call('GET', `/v1/conversations/${id}/items/${gone}`)).status).toBe(404);
    // The turn's response deleted: its conversation cannot be listed (as before a listing was kept).
    expect((await call('DELETE', `/v1/responses/${turn.json.id}`)).status).toBe(200);
    expect((await call('GET', `/v1/conversations/${id}/items`)).status).toBe(404);
  });

  it('items sent with long ids of one length: the listing costs about the conversation (x1 vs x4)', () => {
    // V8 hashes a string past 16,383 characters by its length alone: an index of such ids in a
    // Map compared each with all before it (protocol/string-set.ts).
    const make = (n: number) => {
      const store = new ResponsesItemStore(1 << 30);
      const items = Array.from({ length: n }, (_, i) => ({
        ...output(i),
        id: `fco_${'a'.repeat(17_000)}${String(i).padStart(6, '0')}`,
      }));
      store.openConversation('k', 'conv_1', []);
      store.addConversationItems('k', 'conv_1', items as InputItem[]);
      for (let c = 0; c < 8; c++) store.openConversation('k', `conv_other_${c}`, [output(c)]);
      return { store, ids: items.map((item) => item.id) };
    };
    const s = measureScaling(
      make,
      (input) => {
        const { store, ids } = input;
        // Eight other conversations listed first: the listing is built again (at most 8 are kept).
        for (let c = 0; c < 8; c++) store.listConversation('k', `conv_other_${c}`);
        const found = store.listConversation('k', 'conv_1');
        if (found.missing !== undefined) throw new Error(found.missing);
        return found.indexOf(ids.at(-1)!);
      },
      { from: 16, max: 4096 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('a page after each item added costs the items added, not the conversation again (x1 vs x4)', () => {
    // A client (or a key holder with a loop) adding one item, then reading the newest page: each
    // listing was built anew from the whole conversation (160,000 items: ~0.3 s a page).
    const s = measureScaling(
      (n) => {
        // 5n turns of ten items, then n / 2 items added one at a time.
        const store = conversation(50 * n);
        store.listConversation('k', 'conv_1');
        return { store, n };
      },
      ({ store, n }) => {
        let seen = 0;
        for (let i = 0; i < n / 2; i++) {
          store.addConversationItems('k', 'conv_1', [output(i)]);
          const found = store.listConversation('k', 'conv_1');
          if (found.missing !== undefined) throw new Error(found.missing);
          seen += listPage(found, { limit: '1' }).data.length;
        }
        return seen;
      },
      { from: 16, max: 16_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('costs about the conversation (x1 vs x4)', () => {
    const s = measureScaling(conversation, (store) => readAll(store).length, { from: 500, max: 256_000 });
    console.log('conversation paging', JSON.stringify(s));
    const within = withinBudget(s, 5);
    expect(within.time, JSON.stringify(s)).toBe(true);
  }, 120_000);
});
