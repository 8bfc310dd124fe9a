/**
 * Hardening (issue 8): a client's tool schema runs on model-written arguments on the event loop
 * every request shares. Each case here was super-linear, unbounded or throwing before:
 * `^(a+)+$` doubled per character (3.3 s at 28), ajv-formats' `url` backtracked (1.8 s at 50k
 * characters), `uniqueItems` over 15k objects took 4.7 s, every compiled schema leaked, and a
 * deep or self-referencing schema threw out of the validator.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { nodeEntry } from '../support/toolproof-process.js';
import { preview } from '../../policies/kit/validation/json-shape.js';
import { canonicalKey } from '../../policies/kit/validation/unique-items.js';
import {
  MAX_ARGUMENT_DEPTH,
  MAX_ISSUES,
  validateArguments,
} from '../../policies/kit/validation/validate-arguments.js';
import {
  CACHE_MAX_ENTRIES,
  MAX_SCHEMA_CHARS,
  validatorCacheStats,
} from '../../policies/kit/validation/validator-cache.js';

const run = promisify(execFile);

function timed<T>(fn: () => T): { value: T; ms: number } {
  const start = processCpuMs();
  const value = fn();
  return { value, ms: processCpuMs() - start };
}

const stringWith = (extra: Record<string, unknown>) => ({
  type: 'object',
  properties: { s: { type: 'string', ...extra } },
});

describe('client patterns run in linear time', () => {
  it('`^(a+)+$` against 29 characters: well under a second (backtracking: 6 s+)', () => {
    const { value, ms } = timed(() =>
      validateArguments(stringWith({ pattern: '^(a+)+$' }), { s: `${'a'.repeat(29)}!` }),
    );
    expect(value.valid).toBe(false);
    expect(value.issues[0]).toMatchObject({ path: '/s', keyword: 'pattern' });
    expect(value.issues[0]?.message).toContain('must match pattern "^(a+)+$"');
    expect(ms).toBeLessThan(1000);
    // Still a real pattern check: a matching value passes.
    expect(validateArguments(stringWith({ pattern: '^(a+)+$' }), { s: 'aaaa' }).valid).toBe(true);
  });

  it('patternProperties keys go through the same engine', () => {
    const schema = {
      type: 'object',
      patternProperties: { '^(a+)+$': { type: 'number' } },
      additionalProperties: false,
    };
    const { value, ms } = timed(() => validateArguments(schema, { [`${'a'.repeat(29)}!`]: 1 }));
    expect(value.valid).toBe(false);
    expect(value.issues[0]?.keyword).toBe('additionalProperties');
    expect(ms).toBeLessThan(1000);
    expect(validateArguments(schema, { aaa: 'x' }).issues[0]?.keyword).toBe('type');
  });

  it('a pattern RE2 cannot run (backreference, lookahead) is skipped and reported, never backtracked', () => {
    for (const pattern of ['^(\\w+)\\1$', '^(?=a)(a+)+$']) {
      const r = validateArguments(stringWith({ pattern }), { s: `${'a'.repeat(40)}!` });
      expect(r.valid).toBe(true);
      expect(r.skipped?.[0]).toContain('is not enforced');
    }
  });

  it('ajv-formats `url` (a backtracking expression): 100k characters well under a second (before: 5 s+)', () => {
    const schema = stringWith({ format: 'url' });
    const { value, ms } = timed(() => validateArguments(schema, { s: `http://${'a.'.repeat(50_000)}!` }));
    expect(value.valid).toBe(false);
    expect(ms).toBeLessThan(1000);
    expect(validateArguments(schema, { s: 'https://example.com/a?b=c' }).valid).toBe(true);
    expect(validateArguments(schema, { s: 'not a url' }).valid).toBe(false);
  });

  it('`format: "regex"` only parses the value as a regex (never runs it)', () => {
    const schema = stringWith({ format: 'regex' });
    expect(validateArguments(schema, { s: '^(a+)+$' }).valid).toBe(true);
    expect(validateArguments(schema, { s: '(' }).valid).toBe(false);
    const { ms } = timed(() => validateArguments(schema, { s: '(a+)+'.repeat(40_000) }));
    expect(ms).toBeLessThan(1000);
  });
});

describe('uniqueItems is linear', () => {
  const schema = { type: 'object', properties: { a: { type: 'array', uniqueItems: true } } };

  it('20k distinct objects: under 2 s even on a loaded box (pairwise before: 8 s+)', () => {
    const a = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tag: 'x', nested: { k: [i, 'y'] } }));
    const { value, ms } = timed(() => validateArguments(schema, { a }));
    expect(value.valid).toBe(true);
    expect(ms).toBeLessThan(2000);
  });

  it('finds duplicates whatever their key order, and keeps ajv equality (1 equals 1.0)', () => {
    const r = validateArguments(schema, {
      a: [{ x: 1, y: [2, { z: 3 }] }, 'q', { y: [2, { z: 3 }], x: 1.0 }],
    });
    expect(r.valid).toBe(false);
    expect(r.issues[0]).toMatchObject({ path: '/a', keyword: 'uniqueItems' });
    expect(r.issues[0]?.message).toContain('items ## 0 and 2 are identical');
    expect(validateArguments(schema, { a: [1, '1', [1], { 1: 1 }, null, true] }).valid).toBe(true);
    expect(canonicalKey({ b: 1, a: [1, { d: 2, c: 3 }] })).toBe(
      canonicalKey({ a: [1, { c: 3, d: 2 }], b: 1 }),
    );
  });
});

describe('compiled schemas are bounded by the memory they hold', () => {
  it('ajv itself holds no more schemas than the cache (eviction frees them)', () => {
    for (let i = 0; i < CACHE_MAX_ENTRIES * 2 + 10; i++) {
      validateArguments({ type: 'object', properties: { [`leak${i}`]: { type: 'integer' } } }, {});
    }
    const stats = validatorCacheStats();
    expect(stats.entries).toBeLessThanOrEqual(CACHE_MAX_ENTRIES);
    // Before: one ajv-held schema per distinct schema ever compiled, forever.
    expect(stats.ajvSchemas).toBeLessThanOrEqual(CACHE_MAX_ENTRIES + 2);
  });

  it('400 distinct 100 KB schemas: the heap grows by far less than they weigh (before: +80 MB)', async () => {
    const probe = fileURLToPath(new URL('./heap-probe.ts', import.meta.url));
    const { stdout } = await run(process.execPath, ['--expose-gc', ...nodeEntry(probe), '400', '100000'], {
      timeout: 60_000,
    });
    const { growthMb } = JSON.parse(stdout) as { growthMb: number };
    expect(growthMb).toBeLessThan(30);
  }, 90_000);

  it('a schema larger than the single-schema cap is not compiled: reported, nothing enforced', () => {
    const schema = { type: 'object', description: 'x'.repeat(MAX_SCHEMA_CHARS), required: ['a'] };
    const r = validateArguments(schema, {});
    expect(r).toMatchObject({ valid: true, issues: [] });
    expect(r.schemaError).toContain('limit');
  });

  it('a repeated schema is compiled once (a cache hit costs no compile)', () => {
    const props: Record<string, unknown> = {};
    for (let i = 0; i < 150; i++) props[`f${i}`] = { type: 'string', enum: ['a', 'b', 'c'], maxLength: 9 };
    const schema = { type: 'object', properties: props };
    validateArguments(schema, {});
    const { ms } = timed(() => {
      for (let i = 0; i < 50; i++) validateArguments(JSON.parse(JSON.stringify(schema)), { f1: 'a' });
    });
    expect(ms).toBeLessThan(1000);
  });
});

describe('deep and self-referencing schemas never throw', () => {
  it('100k-level schema: not compiled, reported', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100_000; i++) deep = { type: 'object', properties: { x: deep } };
    const r = validateArguments(deep, { x: { x: 1 } });
    expect(r).toMatchObject({ valid: true, issues: [] });
    expect(r.schemaError).toContain('deeper than');
  });

  it('`{"$ref": "#"}` (recurses without consuming data): reported as a schema problem, not thrown', () => {
    const r = validateArguments({ $ref: '#' }, { a: 1 });
    expect(r).toMatchObject({ valid: true, issues: [] });
    expect(r.schemaError).toContain('could not be applied');
  });

  it('a recursive schema still validates ordinary nested data', () => {
    const tree = { type: 'object', properties: { child: { $ref: '#' }, v: { type: 'integer' } } };
    expect(validateArguments(tree, { child: { child: { v: 1 } } }).valid).toBe(true);
    expect(validateArguments(tree, { child: { child: { v: 'x' } } }).issues[0]?.path).toBe('/child/child/v');
  });

  it('arguments nested 100k deep: invalid with a clear message, not a RangeError', () => {
    let d: unknown = 1;
    for (let i = 0; i < 100_000; i++) d = [d];
    const schema = {
      type: 'object',
      properties: { a: { type: 'array', items: { $ref: '#/properties/a' } } },
    };
    const r = validateArguments(schema, { a: d });
    expect(r.valid).toBe(false);
    expect(r.issues[0]?.message).toContain(`deeper than ${MAX_ARGUMENT_DEPTH} levels`);
  });
});

describe('feedback is bounded', () => {
  // 50k: past ~90k such items the check is more than one validation's steps
  // (step-meter.ts; tests/redteam/schema-validation-cost.test.ts).
  it('50k failing items: at most MAX_ISSUES described, the rest counted', () => {
    const schema = { type: 'object', properties: { a: { type: 'array', items: { type: 'string' } } } };
    const r = validateArguments(schema, { a: Array.from({ length: 50_000 }, (_, i) => i) });
    expect(r.valid).toBe(false);
    expect(r.issues).toHaveLength(MAX_ISSUES + 1);
    expect(r.issues.at(-1)?.message).toContain(`${50_000 - MAX_ISSUES} more`);
  });

  it('many root-level errors on large arguments do not serialize the arguments once per error', () => {
    const required = Array.from({ length: 2000 }, (_, i) => `r${i}`);
    const schema = { type: 'object', required, properties: { big: { type: 'string' } } };
    const { value, ms } = timed(() => validateArguments(schema, { big: 'b'.repeat(2_000_000) }));
    expect(value.issues).toHaveLength(MAX_ISSUES + 1);
    expect(ms).toBeLessThan(1000);
  });

  it('a 10k-value enum is listed by its first values, the rest counted', () => {
    const values = Array.from({ length: 10_000 }, (_, i) => `v${i}`);
    const schema = { type: 'object', properties: { e: { enum: values } } };
    const r = validateArguments(schema, { e: 'nope' });
    expect(r.issues[0]?.message).toContain(`and ${10_000 - MAX_ISSUES} more`);
    expect(r.issues[0]?.message.length).toBeLessThan(2000);
  });

  it('preview writes at most ~80 characters of any value', () => {
    expect(preview({ a: 'x'.repeat(1_000_000), b: [1, 2, 3] })).toHaveLength(80);
    expect(preview([1, 2, 3])).toBe('[1,2,3]');
    expect(preview('hi')).toBe('"hi"');
  });
});
