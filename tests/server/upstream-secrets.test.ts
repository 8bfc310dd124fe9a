/**
 * The scrubber of upstream keys (server/upstream-secrets.ts): a key is replaced however the
 * body is cut into chunks, nothing else changes, short keys are left alone, and the cost is
 * linear in the body (on the wire: tests/hardening/upstream-key-echo.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { SCRUBBED_KEY, UpstreamSecrets } from '../../server/upstream-secrets.js';

const KEY = 'sk-abcdef-0123456789';
const OTHER = 'other-key-ZYXW';

function scrub(secrets: UpstreamSecrets, pieces: string[]): string {
  const s = secrets.scrubber();
  if (!s) return pieces.join('');
  const out = pieces.map((p) => s.push(Buffer.from(p)).toString('latin1'));
  return out.join('') + (s.end()?.toString('latin1') ?? '');
}

describe('UpstreamSecrets', () => {
  const secrets = new UpstreamSecrets();
  secrets.add(KEY);
  secrets.add(OTHER);
  secrets.add(KEY);
  secrets.add('short'); // under 8 characters: not scrubbed
  const text = `a ${KEY} b sk-abc ${OTHER}${KEY} sk-abcdef-012345678 short s`;
  const want = `a ${SCRUBBED_KEY} b sk-abc ${SCRUBBED_KEY}${SCRUBBED_KEY} sk-abcdef-012345678 short s`;

  it('keeps each key once, ignores short ones', () => {
    expect(secrets.keys.map(String)).toEqual([KEY, OTHER]);
  });

  it('whole, and cut in two at every position', () => {
    expect(scrub(secrets, [text])).toBe(want);
    for (let i = 0; i <= text.length; i++)
      expect(scrub(secrets, [text.slice(0, i), text.slice(i)])).toBe(want);
  });

  it("one character at a time; a body ending in a key's start keeps it", () => {
    expect(scrub(secrets, [...text])).toBe(want);
    expect(scrub(secrets, [...'ends in sk-abcdef'])).toBe('ends in sk-abcdef');
  });

  it('no key configured: no scrubber', () => {
    expect(new UpstreamSecrets().scrubber()).toBeUndefined();
  });

  it('budget: 4x the body costs about 4x, full of near-misses', () => {
    // The shared budget helper (tests/support/cost-scaling.ts): inputs grown until a run is
    // measurable, interleaved pairs and medians, so a loaded box cannot fail a linear scan (two
    // runs of a 100 KB body read 13.8x once in CI).
    const s = measureScaling(
      (n) => 'sk-abcdef-012345678 s'.repeat(n).match(/[\s\S]{1,4096}/g)!,
      (reads) => scrub(secrets, reads),
      { from: 1000, max: 1_000_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
