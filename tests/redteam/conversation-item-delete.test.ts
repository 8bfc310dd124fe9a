/**
 * DELETE /v1/conversations/{id}/items/{item_id} (the Agents SDK's popItem, any key holder's loop):
 * each delete built the conversation's listing anew (every turn's JSON parsed again, every id
 * hashed and indexed) and copied the list of ids deleted so far, so a delete cost the whole
 * conversation (160,000 items: ~0.3 s of event loop each) and deleting a share of it cost
 * deletes x conversation. The kept listing now takes the delete in place (a count of live items
 * per range: a page's items and a cursor's place are found in log time), a metadata update keeps
 * it too, and the ids deleted are one set per conversation. x1 vs x4
 * (tests/support/cost-scaling.ts) in the store itself; the real server's answers in both orders.
 */
import fc from 'fast-check';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { InputItem } from '../../protocol/responses/types.js';
import { listPage } from '../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const output = (i: number, id?: string): InputItem =>
  ({
    type: 'function_call_output',
    call_id: `call_${i}`,
    output: `result ${i}`,
    ...(id ? { id } : {}),
  }) as InputItem;

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

interface Page {
  data: Array<{ id: string; call_id?: string; role?: string }>;
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method,
    ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as Page & { id: string; metadata?: unknown } };
}

/** Every call_id listed, paging `limit` at a time in `order`. */
async function readAll(id: string, order: 'asc' | 'desc', limit: number): Promise<string[]> {
  const seen: string[] = [];
  let after: string | null = null;
  for (;;) {
    const q = `order=${order}&limit=${limit}${after ? `&after=${after}` : ''}`;
    const page = await call('GET', `/v1/conversations/${id}/items?${q}`);
    expect(page.status).toBe(200);
    for (const d of page.json.data) seen.push(d.call_id ?? d.role ?? '?');
    if (!page.json.has_more) return seen;
    after = page.json.last_id;
  }
}

describe('conversation items deleted', () => {
  it('are gone from every page, cursor and lookup, with turns, metadata and repeated ids between (the real server)', async () => {
    const conv = await call('POST', '/v1/conversations', { items: [output(0), output(1)] });
    const { id } = conv.json;
    // Two items share an id (a client may send that): each is listed under an id of its own.
    await call('POST', `/v1/conversations/${id}/items`, {
      items: [output(2), output(3, 'fco_twice'), output(4), output(5, 'fco_twice'), output(6)],
    });
    const expected = ['call_0', 'call_1', 'call_2', 'call_3', 'call_4', 'call_5', 'call_6'];
    expect(await readAll(id, 'asc', 3)).toEqual(expected);
    const ids = (await call('GET', `/v1/conversations/${id}/items?order=asc&limit=100`)).json.data.map(
      (d) => d.id,
    );
    expect(new Set(ids).size).toBe(ids.length);
    const drop = async (item: string, gone: string[]) => {
      expect((await call('DELETE', `/v1/conversations/${id}/items/${item}`)).status).toBe(200);
      for (const g of gone) expected.splice(expected.indexOf(g), 1);
      expect(await readAll(id, 'asc', 2)).toEqual(expected);
      expect(await readAll(id, 'desc', 2)).toEqual([...expected].reverse());
      expect((await call('GET', `/v1/conversations/${id}/items/${item}`)).status).toBe(404);
      expect((await call('DELETE', `/v1/conversations/${id}/items/${item}`)).status).toBe(404);
    };
    // The first of the two, then the second under its own listed id.
    await drop('fco_twice', ['call_3']);
    await drop(ids[5]!, ['call_5']);
    await drop(ids[0]!, ['call_0']);
    // A metadata update, then a turn: the listing follows both.
    const meta = await call('POST', `/v1/conversations/${id}`, { metadata: { a: 'b' } });
    expect(meta.json.metadata).toEqual({ a: 'b' });
    expect(await readAll(id, 'asc', 100)).toEqual(expected);
    const turn = await call('POST', '/v1/responses', { model: 'm1', conversation: id, input: 'go on' });
    expect(turn.status).toBe(200);
    expected.push('user', 'assistant');
    expect(await readAll(id, 'asc', 4)).toEqual(expected);
    await drop(ids.at(-1)!, ['call_6']);
    // The last item (popItem): the newest page is the one before it.
    const newest = await call('GET', `/v1/conversations/${id}/items?limit=1`);
    await drop(newest.json.first_id!, ['assistant']);
    // A cursor on an item deleted: past the end, as an unknown one.
    const past = await call('GET', `/v1/conversations/${id}/items?order=asc&after=${ids[0]}`);
    expect(past.json.data).toEqual([]);
    // What the upstream is sent next leaves the deleted items out too.
    const again = await call('POST', '/v1/responses', { model: 'm1', conversation: id, input: 'more' });
    expect(again.status).toBe(200);
    expected.push('user', 'assistant');
    expect(await readAll(id, 'desc', 3)).toEqual([...expected].reverse());
  });

  it('the openai SDK reads a conversation whose items repeat an id to its end, each once', async () => {
    // A cursor on the later of two items with one id found the earlier: a page ending on it was
    // served again and again, and the SDK's auto-pagination never ended.
    const client = new OpenAI({ apiKey: 'none', baseURL: `${pair.proxy.origin}/v1`, maxRetries: 0 });
    const conv = await client.conversations.create({});
    const sent = [output(0), output(1, 'fco_same'), output(2), output(3, 'fco_same'), output(4)];
    const added = await client.conversations.items.create(conv.id, { items: sent as never });
    const seen: string[] = [];
    for await (const item of client.conversations.items.list(conv.id, { order: 'asc', limit: 2 })) {
      seen.push((item as unknown as { call_id: string }).call_id);
      if (seen.length > 10) break;
    }
    expect(seen).toEqual(['call_0', 'call_1', 'call_2', 'call_3', 'call_4']);
    // The ids items.create answered are the ones listed.
    const listed = await client.conversations.items.list(conv.id, { order: 'asc', limit: 100 });
    expect(added.data.map((d) => d.id)).toEqual(listed.data.map((d) => d.id));
    expect(added.data[1]!.id).toBe('fco_same');
    expect(added.data[3]!.id).not.toBe('fco_same');
    // A response's input items the same way (GET /v1/responses/{id}/input_items).
    const res = await client.responses.create({ model: 'm1', input: sent as never });
    const inputs: string[] = [];
    for await (const item of client.responses.inputItems.list(res.id, { order: 'asc', limit: 2 })) {
      inputs.push((item as unknown as { call_id: string }).call_id);
      if (inputs.length > 10) break;
    }
    expect(inputs).toEqual(['call_0', 'call_1', 'call_2', 'call_3', 'call_4']);
  });

  it('a listing kept through adds, deletes and pages reads as one built afresh (random operations)', () => {
    type Op = { add: number[] } | { del: number } | { meta: true };
    const op = fc.oneof(
      fc.record({ add: fc.array(fc.integer({ min: -1, max: 4 }), { minLength: 1, maxLength: 6 }) }),
      fc.record({ del: fc.nat() }),
      fc.record({ meta: fc.constant(true as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops: Op[]) => {
        const store = new ResponsesItemStore(1 << 30);
        store.openConversation('k', 'conv_1', [output(-1)]);
        for (let c = 0; c < 8; c++) store.openConversation('k', `conv_other_${c}`, []);
        // What is listed, oldest first: each item's call_id.
        const model = ['call_-1'];
        let n = 0;
        const listed = () => {
          const found = store.listConversation('k', 'conv_1');
          if (found.missing !== undefined) throw new Error(found.missing);
          return found;
        };
        for (const o of ops) {
          if ('add' in o) {
            // -1: no id; 0-4: one of five ids, repeated on purpose.
            const items = o.add.map((d) => output(n++, d < 0 ? undefined : `fco_${d}`));
            const added = store.addConversationItems('k', 'conv_1', items);
            if (added.missing !== undefined || added.tooLarge) throw new Error('not added');
            for (const item of items) model.push((item as { call_id: string }).call_id);
            const now = listed();
            expect(added.items.map((l) => l.id)).toEqual(
              items.map((_, j) => now.at(now.length - items.length + j).id),
            );
          } else if ('del' in o) {
            const now = listed();
            if (now.length === 0) continue;
            const k = o.del % now.length;
            expect(store.deleteConversationItem('k', 'conv_1', now.at(k).id)).toBe(true);
            model.splice(k, 1);
          } else store.updateConversation('k', 'conv_1', { n: String(n) });
          const kept = listed();
          const ids = Array.from({ length: kept.length }, (_, k) => kept.at(k).id);
          const calls = Array.from(
            { length: kept.length },
            (_, k) => (kept.at(k).item as { call_id: string }).call_id,
          );
          expect(calls).toEqual(model);
          expect(new Set(ids).size).toBe(ids.length);
          for (let k = 0; k < ids.length; k++) expect(kept.indexOf(ids[k]!)).toBe(k);
          // Built afresh (eight other listings read push it out): the same ids in the same order.
          for (let c = 0; c < 8; c++) store.listConversation('k', `conv_other_${c}`);
          const fresh = listed();
          expect(Array.from({ length: fresh.length }, (_, k) => fresh.at(k).id)).toEqual(ids);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a share of a conversation deleted, a page after each, costs the deletes (x1 vs x4)', () => {
    // 20n items in turns of ten, n deletes of the oldest item left, each followed by the newest
    // page (popItem reads it): before, each delete built the listing anew (x16 for x4).
    const s = measureScaling(
      (n) => {
        const store = new ResponsesItemStore(1 << 30);
        store.openConversation('k', 'conv_1', []);
        for (let i = 0; i < 20 * n; i += 10)
          store.addConversationItems(
            'k',
            'conv_1',
            Array.from({ length: 10 }, (_, j) => output(i + j)),
          );
        const found = store.listConversation('k', 'conv_1');
        if (found.missing !== undefined) throw new Error(found.missing);
        const ids = Array.from({ length: found.length }, (_, k) => found.at(k).id);
        return { store, ids, n, next: 0 };
      },
      (input) => {
        const { store, ids, n } = input;
        let seen = 0;
        for (let k = 0; k < n; k++) {
          if (!store.deleteConversationItem('k', 'conv_1', ids[input.next++]!))
            throw new Error('not deleted');
          const found = store.listConversation('k', 'conv_1');
          if (found.missing !== undefined) throw new Error(found.missing);
          seen += listPage(found, { limit: '1' }).data.length;
        }
        return seen;
      },
      { from: 16, max: 16_000 },
    );
    console.log('conversation item deletes', JSON.stringify(s));
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
