/** IndexMap (policies/kit/index-map.ts) behaves as the Map it replaces in the stream hooks. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IndexMap } from '../../policies/kit/index-map.js';

describe('IndexMap', () => {
  it('property: any sequence of sets reads back as a Map would (get, size, insertion order)', () => {
    const key = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constant(Number.NaN), fc.constant(-0));
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.integer()), { maxLength: 12 }), (ops) => {
        const map = new Map<number, number>();
        const im = new IndexMap<number>();
        for (const [k, v] of ops) {
          map.set(k, v);
          expect(im.set(k, v)).toBe(im);
        }
        expect(im.size).toBe(map.size);
        expect([...im.entries()]).toEqual([...map.entries()]);
        expect([...im]).toEqual([...map]);
        expect([...im.values()]).toEqual([...map.values()]);
        for (const k of [-3, -1, 0, 0.5, 2, 5, 9, Number.NaN]) expect(im.get(k)).toBe(map.get(k));
      }),
    );
  });

  it('is empty at first', () => {
    const im = new IndexMap<string>();
    expect(im.size).toBe(0);
    expect(im.get(0)).toBeUndefined();
    expect([...im]).toEqual([]);
  });
});
