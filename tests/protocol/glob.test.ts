/**
 * Model-name globs (protocol/glob.ts): `*` and `?`, everything else literal; and the budget: a
 * client's model name is untrusted, so a name four times as long costs at most about four times
 * as much against the worst patterns (no regex backtracking).
 */
import { describe, expect, it } from 'vitest';
import { globMatch, isGlob } from '../../protocol/glob.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

describe('globMatch', () => {
  it.each([
    ['claude-*', 'claude-sonnet-4-5-20990101', true],
    ['claude-*', 'claude-', true],
    ['claude-*', 'gpt-4', false],
    ['*haiku*', 'claude-3-5-haiku-latest', true],
    ['qwen?', 'qwen3', true],
    ['qwen?', 'qwen', false],
    ['qwen?', 'qwen36', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
    ['a.b', 'axb', false], // a dot is a dot
    ['*', '', true],
    ['', '', true],
    ['', 'x', false],
    ['*a*b', 'xxaxxbxxb', true],
    ['*a*b', 'xxaxxbxxc', false],
  ])('%s ~ %s: %s', (pattern, name, expected) => {
    expect(globMatch(pattern, name)).toBe(expected);
  });

  it('isGlob tells patterns from plain names', () => {
    expect(isGlob('claude-*')).toBe(true);
    expect(isGlob('qwen?')).toBe(true);
    expect(isGlob('qwen3-coder')).toBe(false);
  });

  it('budget: a name 4x as long costs at most about 4x against a many-star pattern', () => {
    // CPU time, medians of interleaved runs, measured again when a first look is over
    // (tests/support/cost-scaling.ts): a ratio of two wall-clock minimums read x15 on CI's loaded
    // 2-core box for this linear matcher
    const pattern = '*a*a*a*a*a*a*a*b';
    const s = measureScaling(
      (n) => 'a'.repeat(n),
      (name) => {
        let hits = 0;
        for (let i = 0; i < 50; i++) if (globMatch(pattern, name)) hits++;
        return hits;
      },
      { from: 256, max: 1 << 16 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
