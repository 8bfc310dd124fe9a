import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tooDeepPath } from '../../protocol/json-depth.js';
import {
  excessKeys,
  keyExcessError,
  MAX_DISTINCT_KEYS,
  MAX_SCANNED_DEPTH,
  MAX_TOP_LEVEL_FIELDS,
} from '../../protocol/json-keys.js';
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

  it('a body that is not JSON is left to the parse', () => {
    expect(excessKeys(buf('{"a":"never closed'))).toBeNull();
    expect(excessKeys(buf('[1,2,{"a":1}]'), { topLevel: 0, distinct: 1 })).toBeNull();
  });

  it('a body nested past MAX_SCANNED_DEPTH is refused from its bytes, naming the field as the check after the parse does', () => {
    // JSON.parse of 8M nested arrays (16 MB) held the loop 11-15 s before the depth check ran.
    expect(excessKeys(buf(`${'['.repeat(MAX_SCANNED_DEPTH)}${']'.repeat(MAX_SCANNED_DEPTH)}`))).toBeNull();
    expect(excessKeys(buf(`${'['.repeat(MAX_SCANNED_DEPTH + 1)}`))).toEqual({
      kind: 'deep',
      limit: MAX_SCANNED_DEPTH,
      path: '0.0.0.0',
    });
    const schema = `${'{"type":"object","properties":{"a":'.repeat(50_000)}`;
    const body = `{"model":"m","tools":[{"type":"function","function":{"name":"t","parameters":${schema}`;
    expect(excessKeys(buf(body))).toMatchObject({ kind: 'deep', path: 'tools.0.function.parameters' });
    expect(keyExcessError(excessKeys(buf(body))!).message).toBe(
      'Invalid field "tools.0.function.parameters": nested deeper than 128 levels.',
    );
  });

  it('names the same path as tooDeepPath for any body nested past the bound (property)', () => {
    const segment = fc.oneof(fc.nat({ max: 3 }), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), (path, filler) => {
        // filler before each step: earlier members and elements the path skips
        let value: unknown = [];
        for (let d = 0; d < 40; d++) value = [value];
        for (const s of [...path].reverse())
          value =
            typeof s === 'number'
              ? [...Array.from({ length: s }, () => filler), value]
              : { x: filler, [s]: value };
        const body = buf(JSON.stringify(value));
        const limit = 30;
        const excess = excessKeys(body, { topLevel: 1e9, distinct: 1e9, depth: limit });
        expect(excess?.kind).toBe('deep');
        expect(excess?.kind === 'deep' && excess.path).toBe(tooDeepPath(JSON.parse(body.toString()), limit));
      }),
      { numRuns: 200 },
    );
  });

  it('keys of digits only are counted apart when indexKeys is given (prompt_logprobs name token ids)', () => {
    const ids = `[${Array.from({ length: 100 }, (_, i) => `{"${i}":{"logprob":-1}}`).join(',')}]`;
    expect(excessKeys(buf(ids), { topLevel: 10, distinct: 10 })?.kind).toBe('distinct');
    expect(excessKeys(buf(ids), { topLevel: 10, distinct: 10, indexKeys: 100 })).toBeNull();
    expect(excessKeys(buf(ids), { topLevel: 10, distinct: 10, indexKeys: 99 })).toEqual({
      kind: 'distinct',
      limit: 99,
    });
  });

  it('costs about x4 for x4 the bytes: keys, long strings, escapes', () => {
    const inputs: Array<(size: number) => Buffer> = [
      (size) => buf(`{"x":[${Array.from({ length: size }, (_, i) => `{"k${i % 40_000}":"v"}`).join(',')}]}`),
      (size) => buf(`{"s":"${'ab\\"'.repeat(size)}"}`),
      (size) => buf(`{"s":"${'\\'.repeat(size * 2)}"}`),
      // token-id keys counted apart, and objects four levels deep (the path kept per level)
      (size) =>
        buf(`[${Array.from({ length: size }, (_, i) => `{"${i % 40_000}":{"a":[{"b":1},2]}}`).join(',')}]`),
    ];
    for (const make of inputs) {
      const s = measureScaling(
        make,
        (b) => excessKeys(b, { topLevel: 1024, distinct: 50_000, indexKeys: 300_000 }),
        { from: 1000, max: 1_000_000 },
      );
      expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
    }
  }, 60_000);
});
