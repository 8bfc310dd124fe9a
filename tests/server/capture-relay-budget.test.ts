/**
 * The cluster primary's relay budget per reader (server/capture/relay-budget.ts), on a clock the
 * test moves: each reader its own burst and an even share of the rate, the total bounded, one
 * question at a time per reader, and only current readers held.
 */
import { describe, expect, it } from 'vitest';
import { RelayBudget } from '../../server/capture/relay-budget.js';

const M = 1024 * 1024;

function budget() {
  let now = 0;
  const b = new RelayBudget({
    ratePerS: 4 * M,
    burst: 16 * M,
    totalBurst: 32 * M,
    maxGathers: 4,
    now: () => now,
  });
  return { b, tick: (ms: number) => (now += ms) };
}

/** One question of `reader` that relays `chars`, if it passes: 0, else the seconds to wait. */
function read(b: RelayBudget, reader: string, chars: number): number {
  const wait = b.admit(reader);
  if (wait > 0) return wait;
  b.relayed(reader, chars);
  b.done(reader);
  return 0;
}

describe('RelayBudget', () => {
  it('a reader over its burst is refused; another reader is not, and pays back at half the rate while both owe', () => {
    const { b, tick } = budget();
    for (let i = 0; i < 6; i++) expect(read(b, 'alice', 3 * M)).toBe(0);
    expect(read(b, 'alice', 3 * M)).toBe(1); // 18M owed, 2M past her burst at 4M/s
    expect(read(b, 'bob', 1 * M)).toBe(0);
    // Both owe: alice's share is 2M/s, bob's 1M paid in 0.5 s, then alice has the whole rate.
    tick(500);
    expect(read(b, 'alice', 0)).toBe(1);
    tick(250); // 18 - 1 - 1 = 16M: at her burst
    expect(read(b, 'alice', 3 * M)).toBe(0);
  });

  it('the total is bounded: readers together past the total burst are all refused', () => {
    const { b } = budget();
    for (const reader of ['a', 'b', 'c']) expect(read(b, reader, 15 * M)).toBe(0);
    expect(read(b, 'd', 1)).toBeGreaterThanOrEqual(1);
    // 45M owed past 32M at 4M/s
    expect(read(b, 'a', 1)).toBe(Math.ceil((13 * M) / (4 * M)));
  });

  it('one question in flight per reader, four in all', () => {
    const { b } = budget();
    expect(b.admit('a')).toBe(0);
    expect(b.admit('a')).toBe(1);
    for (const r of ['b', 'c', 'd']) expect(b.admit(r)).toBe(0);
    expect(b.admit('e')).toBe(1);
    b.done('a');
    expect(b.admit('e')).toBe(0);
  });

  it('holds only readers that owe or ask', () => {
    const { b, tick } = budget();
    for (let i = 0; i < 1000; i++) read(b, `key-${i}`, 1000);
    tick(1000);
    read(b, 'last', 0);
    expect(b.size).toBeLessThanOrEqual(1); // 'last' itself, until the next look
  });
});
