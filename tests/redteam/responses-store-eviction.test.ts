/**
 * The Responses item store (server/front-doors/responses/item-store.ts) keeps every output item
 * the model wrote, each call one, and a full store evicts one for each it keeps: the oldest of
 * the busiest key, read with `keys().next()` on that key's Map. A Map whose oldest is deleted
 * over and over keeps the deleted slots until it is rehashed, and each next() walks them: into
 * a store full with 60,000 small items (a call each, ~16 MB: the default
 * TOOLPROOF_RESPONSES_STORE_MB), 64,000 more cost 1,107-1,183 ms against 188-223 ms into a store
 * with room for them (x5.5), and an upstream can answer one request with that many calls
 * (through the server, 80,000 calls: ~2 s of the 6.9 s of the loop that answer took was the
 * store's, 4.6-5.2 s with the store off). Now each key's items are a write order
 * (server/write-order.ts, the fallback memory's): 200-270 vs 128-237 ms. Which item goes stays
 * the same (the first test).
 */
import { describe, expect, it } from 'vitest';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { call, PER_ITEM } from '../support/stored-calls.js';
import { compareCosts, cpuMsOf } from '../support/cost-scaling.js';

const LIVE = 60_000;
const MORE = 64_000;

describe('a full Responses item store', () => {
  it('evicts the busiest key oldest first, a quiet key last', () => {
    const store = new ResponsesItemStore(PER_ITEM * 100);
    store.keep('quiet', [call(0)]);
    for (let i = 1; i <= 300; i++) store.keep('busy', [call(i)]);
    expect(store.lookup('quiet', 'fc_00000000')).toBeDefined();
    expect(store.size).toBe(100);
    expect(store.lookup('busy', 'fc_00000300')).toBeDefined();
    expect(store.lookup('busy', 'fc_00000202')).toBeDefined();
    expect(store.lookup('busy', 'fc_00000201')).toBeUndefined();
    // Kept again: the newest, so not the next to go.
    store.keep('busy', [call(202)]);
    store.keep('busy', [call(301)]);
    expect(store.lookup('busy', 'fc_00000202')).toBeDefined();
    expect(store.lookup('busy', 'fc_00000203')).toBeUndefined();
  });

  it('keeping items into a full store costs about what keeping them into one with room costs', () => {
    // Built once: the store keeps each item's JSON, never the object.
    const live = Array.from({ length: LIVE }, (_, i) => call(i));
    const more = Array.from({ length: MORE }, (_, i) => call(LIVE + i));
    const cpuOfKeeping = (full: boolean) => {
      const store = new ResponsesItemStore(PER_ITEM * LIVE * (full ? 1 : 3));
      store.keep('a', live);
      const ms = cpuMsOf(() => store.keep('a', more));
      expect(store.size).toBe(full ? LIVE : LIVE + MORE);
      return ms;
    };
    const c = compareCosts(
      () => cpuOfKeeping(true),
      () => cpuOfKeeping(false),
      (full, room) => full < 2.5 * room + 20,
    );
    expect(c.ok, JSON.stringify(c)).toBe(true);
  }, 60_000);
});
