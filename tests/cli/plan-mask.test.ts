/**
 * `toolproof launch --print` masks the key (cli/launch/plan.ts maskKey): a key of 13-15
 * characters showed its first 4 (a third of the secret); under 16 characters none is shown now.
 */
import { describe, expect, it } from 'vitest';
import { maskKey } from '../../cli/launch/plan.js';

describe('maskKey', () => {
  it('a short key shows none of its characters, only its length', () => {
    for (const key of ['sk-1234567890', 'sk-12345678901x', 'abcdefgh', 'k']) {
      expect(key.length).toBeLessThan(16);
      const out = maskKey(`KEY=${key} again ${key}`, key);
      if (key.length > 1) expect(out).not.toContain(key.slice(0, 2));
      expect(out).toBe(`KEY=****(${key.length} characters) again ****(${key.length} characters)`);
    }
  });

  it('a long key shows its first 4 characters', () => {
    const key = 'sk-secret-launch-key-123456';
    expect(maskKey(`KEY=${key}`, key)).toBe('KEY=sk-s…****');
  });

  it('no key: the text unchanged', () => {
    expect(maskKey('KEY=', '')).toBe('KEY=');
  });
});
