import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { excessKeys, MAX_DISTINCT_KEYS, MAX_TOP_LEVEL_FIELDS } from '../../protocol/json-keys.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

/** The reference: the parsed value's top-level field count and distinct keys. */
function counted(value: unknown): { top: number; distinct: number } {
  const keys = new Set<string>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (v !== null && typeof v === 'object')
      for (const [k, child] of Object.entries(v)) {
        keys.add(k);
        stack.push(child);
      }
  }
  const top =
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value).length : 0;
  return { top, distinct: keys.size };
}

const buf = (s: string) => Buffer.from(s, 'utf8');

describe('excessKeys: object keys counted from the bytes, before the parse', () => {
  it('counts what JSON.parse would make: each bound is met exactly at its limit', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 4 })), (value) => {
        const body = buf(JSON.stringify(value));
        const { top, distinct } = counted(value);
        expect(excessKeys(body, { topLevel: top, distinct })).toBeNull();
        if (top > 0) expect(excessKeys(body, { topLevel: top - 1, distinct })?.kind).toBe('top-level');
        if (distinct > top)
          expect(excessKeys(body, { topLevel: top, distinct: distinct - 1 })?.kind).toBe('distinct');
      }),
      { numRuns: 300 },
    );
  });

  it('keys are told from values: quotes, escapes, brackets and commas inside strings', () => {
    const body = buf(
      '{"a\\"b":"x\\\\","c":"{\\"d\\":1,[}]","e":[{"f":"\\\\\\""},"g"],"h":{"i":{"a\\"b":1}}}',
    );
    expect(counted(JSON.parse(body.toString()))).toEqual({ top: 4, distinct: 6 });
    expect(excessKeys(body, { topLevel: 4, distinct: 6 })).toBeNull();
    expect(excessKeys(body, { topLevel: 3, distinct: 6 })?.kind).toBe('top-level');
    expect(excessKeys(body, { topLevel: 4, distinct: 5 })?.kind).toBe('distinct');
  });

  it('the defaults refuse a million fields or keys and accept a long agent history', () => {
    const many = Array.from({ length: MAX_TOP_LEVEL_FIELDS + 1 }, (_, i) => `"k${i}":1`).join(',');
    expect(excessKeys(buf(`{"model":"m",${many}}`))).toEqual({
      kind: 'top-level',
      limit: MAX_TOP_LEVEL_FIELDS,
    });
    const objects = Array.from({ length: MAX_DISTINCT_KEYS + 1 }, (_, i) => `{"k${i}":1}`).join(',');
    expect(excessKeys(buf(`{"model":"m","x":[${objects}]}`))).toEqual({
      kind: 'distinct',
      limit: MAX_DISTINCT_KEYS,
    });
    const history = {
      model: 'm',
      messages: Array.from({ length: 5000 }, (_, i) => ({
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"cmd":"ls ${i}"}` } },
        ],
      })),
      tools: Array.from({ length: 200 }, (_, t) => ({
        type: 'function',
        function: {
          name: `t${t}`,
          parameters: { type: 'object', properties: { [`p${t}a`]: {}, [`p${t}b`]: {} } },
        },
      })),
    };
    expect(excessKeys(buf(JSON.stringify(history)))).toBeNull();
  });

  it('a body that is not JSON, or nests past what it tracks, is left to the parse', () => {
    expect(excessKeys(buf('{"a":"never closed'))).toBeNull();
    expect(excessKeys(buf(`${'['.repeat(5000)}{"a":1}`))).toBeNull();
    expect(excessKeys(buf('[1,2,{"a":1}]'), { topLevel: 0, distinct: 1 })).toBeNull();
  });

  it('costs about x4 for x4 the bytes: keys, long strings, escapes', () => {
    const inputs: Array<(size: number) => Buffer> = [
      (size) => buf(`{"x":[${Array.from({ length: size }, (_, i) => `{"k${i % 40_000}":"v"}`).join(',')}]}`),
      (size) => buf(`{"s":"${'ab\\"'.repeat(size)}"}`),
      (size) => buf(`{"s":"${'\\'.repeat(size * 2)}"}`),
    ];
    for (const make of inputs) {
      const s = measureScaling(make, (b) => excessKeys(b), { from: 1000, max: 1_000_000 });
      expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
    }
  }, 60_000);
});
