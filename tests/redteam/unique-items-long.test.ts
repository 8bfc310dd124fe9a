/**
 * `uniqueItems` (policies/kit/validation/unique-items.ts) finds a repeat through a Map of each
 * item's canonical JSON. V8 hashes a string past 16,383 characters by its length alone: a
 * model's call whose array holds n strings of 20 KB alike but for their ends (a client schema
 * with `uniqueItems: true`, checked before the call is passed on) compared each with all the
 * others: 250 vs 1,000 of them 73 vs 1,752 ms of CPU (x24), on the event loop, the call still
 * checked. Now a StringMap (protocol/string-set.ts): linear.
 */
import { describe, expect, it } from 'vitest';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import type { JsonObject } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const schema = {
  type: 'object',
  properties: { xs: { type: 'array', uniqueItems: true, items: { type: 'string' } } },
} as unknown as JsonObject;

/** n strings of 20,006 characters, alike but for their last six; `repeat` ends with the first again. */
const items = (n: number, repeat = false) => {
  const xs = Array.from({ length: n }, (_, i) => `${'a'.repeat(20_000)}${String(i).padStart(6, '0')}`);
  if (repeat) xs.push(xs[0]!);
  return xs;
};

describe('uniqueItems over long strings alike but for their ends', () => {
  it('still finds the repeat', () => {
    expect(validateArguments(schema, { xs: items(3) }).valid).toBe(true);
    const r = validateArguments(schema, { xs: items(3, true) });
    expect(r.valid).toBe(false);
    expect(r.issues[0]?.keyword).toBe('uniqueItems');
  });

  it('x4 the items cost about x4, not x16', () => {
    const s = measureScaling(
      (n) => ({ xs: items(n) }),
      (args) => validateArguments(schema, args),
      { from: 64, max: 512 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
