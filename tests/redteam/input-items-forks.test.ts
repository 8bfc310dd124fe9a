/**
 * GET /v1/responses/{id}/input_items of responses that share a chain: two forks of one
 * conversation (two requests naming the same previous_response_id) read alternately, and many
 * responses of one chain. Each listing was built from the whole chain (every turn's JSON parsed,
 * an id derived per item) and counted whole against the store's budget: two forks of a chain
 * over half the budget evicted each other, so every page read the whole chain again (the last
 * helper measured 0.5-1.25 s a page at ~60-121k items). A listing now starts from a kept
 * listing of its chain: the shared part is read through it, counted once. Listings built so
 * read exactly as ones built whole (random trees, against a fresh store; the real server's pages
 * through the openai SDK); x1 vs x4
 * (tests/support/cost-scaling.ts) in the store.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InputItem, OutputItem } from '../../protocol/responses/types.js';
import { listPage } from '../../server/front-doors/responses/conversations.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { KeptListing, listedId } from '../../server/front-doors/responses/kept-listing.js';
import { compareCosts, cpuMsOf, measureScaling, prng, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';
import { answer, chainThroughSdk, toolOutput } from '../support/stored-calls.js';

const output = toolOutput;

/** `turns` responses in a row (ten items brought, one answer each), then two forks of the last. */
function forked(turns: number, budget = 1 << 30, pad = 0): ResponsesItemStore {
  const store = chain(turns, budget, pad);
  for (const fork of ['a', 'b'])
    store.keepResponse('k', `fork_${fork}`, `resp_${turns - 1}`, [output(-1)], [answer(-1)], false, {
      envelope: '{}',
    });
  return store;
}

/** `turns` responses in a row (ten items brought, one answer each). */
function chain(turns: number, budget = 1 << 30, pad = 0): ResponsesItemStore {
  const store = new ResponsesItemStore(budget);
  for (let t = 0; t < turns; t++)
    store.keepResponse(
      'k',
      `resp_${t}`,
      t === 0 ? undefined : `resp_${t - 1}`,
      Array.from({ length: 10 }, (_, j) => output(10 * t + j, pad)),
      [answer(t)],
      false,
      { envelope: '{}' },
    );
  return store;
}

/** The first page (desc, OpenAI's default) of response `id`'s input items. */
function firstPage(store: ResponsesItemStore, id: string) {
  const found = store.inputItems('k', id);
  if (!found) throw new Error(`${id} not held`);
  return listPage(found, { limit: '20' });
}

afterEach(() => vi.restoreAllMocks());

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

describe('input items of responses sharing a chain', () => {
  /** A page of each of six responses along the chain (oldest first), then of the two forks. */
  const pages = (store: ResponsesItemStore, turns: number) => {
    const seen: ReturnType<typeof firstPage>[] = [];
    for (let k = 1; k <= 6; k++) seen.push(firstPage(store, `resp_${Math.floor((turns * k) / 7)}`));
    for (const fork of ['fork_a', 'fork_b']) seen.push(firstPage(store, fork));
    return seen;
  };
  /** A store that holds the chain and one listing of it, not two (each turn's JSON ~1.8 KB, its entries ~2.1 KB). */
  const tight = (turns: number) => forked(turns, 2_800 * turns, 90);

  it('two forks and responses along their chain, read in turn, parse the chain once', () => {
    const turns = 200;
    const store = tight(turns);
    const parse = vi.spyOn(JSON, 'parse');
    firstPage(store, 'fork_a');
    expect(parse.mock.calls.length).toBeGreaterThanOrEqual(turns);
    parse.mockClear();
    for (let k = 0; k < 5; k++) {
      const [, , , , , , a, b] = pages(store, turns);
      // Each fork its own item first (desc), then the chain's last answer.
      expect(a!.data[1]?.id).toBe(`msg_out_${turns - 1}`);
      expect(b!.data.map((x) => x.id).slice(1)).toEqual(a!.data.map((x) => x.id).slice(1));
      expect(a!.has_more).toBe(true);
    }
    // Before: each read built its listing from the whole chain (40 x up to ~200 parses).
    expect(parse.mock.calls.length).toBeLessThan(10);
    expect(store.responseCount).toBe(turns + 2);
  });

  it('through the real server: two forks, each read with the SDK both ways, then the turn they share deleted', async () => {
    const client = new OpenAI({ apiKey: 'none', baseURL: `${pair.proxy.origin}/v1`, maxRetries: 0 });
    const turn = (t: number, prev?: string) =>
      client.responses.create({
        model: 'm1',
        input: [output(2 * t), output(2 * t + 1)] as never,
        ...(prev ? { previous_response_id: prev } : {}),
      });
    const first = await turn(0);
    const shared = await turn(1, first.id);
    const forks = [await turn(2, shared.id), await turn(3, shared.id)];
    const read = async (id: string, order: 'asc' | 'desc') => {
      const seen: string[] = [];
      for await (const item of client.responses.inputItems.list(id, { order, limit: 2 }))
        seen.push((item as { call_id?: string }).call_id ?? item.type);
      return seen;
    };
    for (let round = 0; round < 2; round++)
      for (const [k, fork] of forks.entries()) {
        const t = k + 2;
        const expected = [
          'call_0',
          'call_1',
          'message',
          'call_2',
          'call_3',
          'message',
          `call_${2 * t}`,
          `call_${2 * t + 1}`,
        ];
        expect(await read(fork.id, 'asc')).toEqual(expected);
        expect(await read(fork.id, 'desc')).toEqual(expected.reverse());
        // The turn they share, read after them: its own input, not a fork's.
        expect(await read(shared.id, 'asc')).toEqual(['call_0', 'call_1', 'message', 'call_2', 'call_3']);
      }
    await client.responses.delete(shared.id);
    expect(await read(forks[1]!.id, 'asc')).toEqual(['call_6', 'call_7']);
    expect(await read(first.id, 'asc')).toEqual(['call_0', 'call_1']);
  });

  it('read in any order, with turns deleted between, list as listings built whole (random trees)', () => {
    let readFromEnd = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const rnd = prng(seed);
      type Op = { keep: [string, string | undefined, InputItem[]] } | { del: string };
      const ops: Op[] = [];
      const ids: string[] = [];
      const replay = () => {
        const s = new ResponsesItemStore(1 << 30);
        ops.forEach((op, i) => {
          if ('del' in op) s.deleteResponse('k', op.del);
          else
            s.keepResponse('k', op.keep[0], op.keep[1], op.keep[2], [answer(i)], false, { envelope: '{}' });
        });
        return s;
      };
      const store = new ResponsesItemStore(1 << 30);
      const listed = (s: ResponsesItemStore, id: string) => {
        const l = s.inputItems('k', id);
        if (!l) return undefined;
        const all = Array.from({ length: l.length }, (_, k) => l.at(k));
        // Every cursor finds its place; an id of another branch none.
        const places = [...all.map((x) => x.id), ...ids.map((r) => `msg_out_${ids.indexOf(r)}`)].map((c) =>
          l.indexOf(c),
        );
        return { all: JSON.stringify(all), places, pages: [listPage(l, { order: 'asc', limit: '3' })] };
      };
      // The first pages (desc, no cursor) read from the newest turn back, then a cursor from them.
      const tail = (s: ResponsesItemStore, id: string, whole: boolean) => {
        const firsts = [];
        for (const limit of ['1', '3', '100']) {
          const l = whole ? s.inputItems('k', id) : s.inputItemsPaged('k', id);
          if (!l) return undefined;
          if (!(l instanceof KeptListing)) readFromEnd++;
          firsts.push(listPage(l, { limit }));
        }
        // Read forward, then by cursors.
        const asc = listPage(s.inputItemsPaged('k', id)!, { order: 'asc', limit: '4' });
        const l = s.inputItemsPaged('k', id)!;
        // Every cursor finds its place (read from the id where the chain is read by pages); an id of another branch none.
        const all = Array.from({ length: l.length }, (_, k) => l.at(k).id);
        const places = [
          ...all,
          ...ids.map((r) => `msg_out_${ids.indexOf(r)}`),
          listedId(ids[0]!, 99, output(0)),
        ].map((c) => l.indexOf(c));
        return [
          ...firsts,
          ...firsts.map((f) => listPage(l, { limit: '2', after: f.last_id ?? '' })),
          asc,
          places,
        ];
      };
      // Some trees with no id sent twice (every id its own: the listing read from its end).
      const repeats = seed % 3 === 0 ? 0 : 0.3;
      for (let step = 0; step < 60; step++) {
        const r = rnd();
        if (r < 0.45 || ids.length === 0) {
          const id = `resp_${seed}_${step}`;
          const prev = ids.length && rnd() < 0.9 ? ids[Math.floor(rnd() * ids.length)] : undefined;
          // Ids a client sent twice (derived anew where listed twice), and items sent without one.
          const brought = Array.from(
            { length: 1 + Math.floor(rnd() * 3) },
            (_, j) =>
              (rnd() < repeats
                ? { type: 'message', role: 'user', id: `dup_${Math.floor(rnd() * 2)}`, content: 'again' }
                : output(step * 10 + j)) as InputItem,
          );
          ops.push({ keep: [id, prev, brought] });
          ids.push(id);
          store.keepResponse('k', id, prev, brought, [answer(ops.length - 1)], false, { envelope: '{}' });
        } else if (r < 0.5) {
          const id = ids[Math.floor(rnd() * ids.length)]!;
          ops.push({ del: id });
          store.deleteResponse('k', id);
        } else {
          const id = ids[Math.floor(rnd() * ids.length)]!;
          const whole = replay();
          expect(tail(store, id, false), `seed ${seed} step ${step} ${id} tail`).toEqual(
            tail(whole, id, true),
          );
          expect(listed(store, id), `seed ${seed} step ${step} ${id}`).toEqual(listed(whole, id));
        }
      }
    }
    // Read from the end where the chain allowed it (about a third of the reads), not always built whole.
    console.log('read from the end', readFromEnd);
    expect(readFromEnd).toBeGreaterThan(100);
  });

  it('read from the end: an id its chain listed before (an output evicted, then returned again; one like a derived id) listed as built whole', () => {
    const said = (id: string, pad: number) =>
      ({
        type: 'message',
        id,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'x'.repeat(pad), annotations: [] }],
      }) as OutputItem;
    const probe = new ResponsesItemStore(1 << 30);
    probe.keepResponse('k', 'resp_0', undefined, [output(0)], [said('msg_out_0', 10_000)], false, {
      envelope: '{}',
    });
    // Its first output: the id of one of resp_0's (evicted by then); or the id resp_0's input is listed under.
    for (const again of ['msg_out_0', listedId('resp_0', 0, output(0))]) {
      // The first: room for the first turn and 3 KB (the second turn's 5 KB output evicts the first's).
      const store = new ResponsesItemStore(again === 'msg_out_0' ? probe.bytes + 3_000 : 1 << 30);
      const turns: [string, OutputItem[]][] = [
        ['resp_0', [said('msg_out_0', 10_000)]],
        ['resp_1', [said('msg_out_1', 5_000)]],
        ['resp_2', [said(again, 1)]],
        ['resp_3', [said('msg_out_3', 1)]],
      ];
      for (const [t, [id, out]] of turns.entries())
        store.keepResponse('k', id, t === 0 ? undefined : turns[t - 1]![0], [output(t)], out, false, {
          envelope: '{}',
        });
      expect(store.responseCount).toBe(4);
      const fromEnd = store.inputItemsPaged('k', 'resp_3')!;
      const page = listPage(fromEnd, { limit: '100' });
      expect(page, again).toEqual(listPage(store.inputItems('k', 'resp_3')!, { limit: '100' }));
      // Each id once: the later one derived anew.
      expect(new Set(page.data.map((x) => x.id)).size).toBe(7);
    }
  });

  it('the first page (desc, no cursor) of a response of a 4x longer chain costs the same (x1 vs x4)', () => {
    // A chain of `turns` responses (ten items brought, one answer each), built outside the timing.
    const firstPageOf = (turns: number) => {
      const store = chain(turns);
      return cpuMsOf(() => listPage(store.inputItemsPaged('k', `resp_${turns - 1}`)!, { limit: '20' }));
    };
    const c = compareCosts(
      () => firstPageOf(2_000),
      () => firstPageOf(8_000),
      (a, b) => b <= 2 * a + 2,
    );
    console.log('first page, 22k vs 88k items', JSON.stringify(c));
    // Before: the whole chain parsed for it (x4 the items, ~x4 the time).
    expect(c.ok, JSON.stringify(c)).toBe(true);
  }, 120_000);

  it('through the real server: the first page of a response reads the turns it shows', async () => {
    const client = new OpenAI({ apiKey: 'none', baseURL: `${pair.proxy.origin}/v1`, maxRetries: 0 });
    const prev = await chainThroughSdk(client, 40);
    const parse = vi.spyOn(JSON, 'parse');
    const page = await client.responses.inputItems.list(prev, { limit: 3 });
    const parsed = parse.mock.calls.length;
    parse.mockRestore();
    expect(page.data.map((x) => (x as { call_id?: string }).call_id ?? x.type)).toEqual([
      'call_79',
      'call_78',
      'message',
    ]);
    expect(page.has_more).toBe(true);
    // Before: the chain's 40 turns and 39 answers parsed.
    expect(parsed).toBeLessThan(10);
    // The next page (a cursor) as the whole chain lists it.
    const next = await client.responses.inputItems.list(prev, { limit: 3, after: page.data.at(-1)!.id! });
    expect(next.data.map((x) => (x as { call_id?: string }).call_id ?? x.type)).toEqual([
      'call_77',
      'call_76',
      'message',
    ]);
  });

  it('responses along one chain and its forks, a page each, cost the pages (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => {
        const store = tight(n);
        firstPage(store, 'fork_a');
        return { store, n };
      },
      ({ store, n }) => {
        for (let k = 0; k < 20; k++) pages(store, n);
      },
      { from: 25, max: 4_000 },
    );
    console.log('input items of one chain', JSON.stringify(s));
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 120_000);
});
