/**
 * The shared table of compiled patterns (policies/kit/validation/linear-regexp.ts) keeps the
 * patterns in use: full, it evicts the oldest one not tested since an eviction last passed it.
 * A pattern's compile is seen through the budget that pays for it (a recompile takes again).
 */
import { describe, expect, it } from 'vitest';
import {
  createLinearEngine,
  PATTERN_TABLE_ENTRIES,
  patternTableStats,
  withPatternBudget,
} from '../../policies/kit/validation/linear-regexp.js';

const engine = createLinearEngine();

/** Whether testing `pattern` now compiles it (it was not held). */
function compiles(pattern: string): boolean {
  let took = 0;
  const budget = {
    take: () => {
      took++;
      return true;
    },
  };
  withPatternBudget(budget, () => engine(pattern, 'u').test('a1b'));
  return took > 0;
}

describe('the shared pattern table', () => {
  it('full, it evicts the oldest pattern not tested since, and keeps one tested since', () => {
    const n = PATTERN_TABLE_ENTRIES;
    const name = (i: number) => `^t${i}b+$`;
    // Twice the table's patterns, untested since: whatever other files left there is gone (the
    // module is shared by a worker's files), and the table holds t(n) .. t(2n-1), oldest first.
    for (let i = 0; i < 2 * n; i++) compiles(name(i));
    expect(patternTableStats().entries).toBe(n);
    expect(compiles(name(n))).toBe(false); // held: a hit, no compile
    // Two new patterns: the table evicts two of the oldest, but not t(n), tested since.
    compiles('^new1$');
    compiles('^new2$');
    expect(patternTableStats().entries).toBe(n);
    expect(compiles(name(n))).toBe(false);
    expect(compiles(name(n + 3))).toBe(false);
    expect(compiles(name(n + 1))).toBe(true);
  });
});
