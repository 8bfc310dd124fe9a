/**
 * Model-name globs (protocol/glob.ts): `*` and `?`, everything else literal; and the budget: a
 * client's model name is untrusted, so a name four times as long costs at most about four times
 * as much against the worst patterns (no regex backtracking).
 */
import { describe, expect, it } from 'vitest';
import { globMatch, isGlob } from '../../protocol/glob.js';

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
    const pattern = '*a*a*a*a*a*a*a*b';
    const time = (n: number) => {
      const name = 'a'.repeat(n);
      const started = performance.now();
      for (let i = 0; i < 200; i++) globMatch(pattern, name);
      return performance.now() - started;
    };
    time(256); // warm-up
    const small = Math.min(time(256), time(256), time(256));
    const large = Math.min(time(1024), time(1024), time(1024));
    expect(large / small).toBeLessThan(8);
  });
});
