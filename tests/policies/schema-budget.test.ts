/**
 * Issue 18 item 2: compiling client tool schemas had no budget. A schema full of patterns and
 * formats cost 100-350 ms of event loop to compile, 20 called tools blocked every stream for
 * seconds, a distinct schema per request defeated the cache, and the cache counted JSON bytes
 * while a compiled 500-pattern schema held ~8-11 MB of heap. Now compile work is estimated from
 * the schema's shape and paid from a per-request and a per-process budget; patterns compile
 * lazily into one shared, bounded table; the cache is bounded by estimated cost. A call whose
 * schema is not compiled goes unchecked, and the trace and a metric say why.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { patternTableStats } from '../../policies/kit/validation/linear-regexp.js';
import { CHUNK_STEPS, FIRST_STEPS, STEPS_PER_UNIT } from '../../policies/kit/validation/step-meter.js';
import {
  estimateCompileCost,
  MAX_COMPILE_COST,
  validatorCacheStats,
} from '../../policies/kit/validation/validator-cache.js';
import { CompileBudgets } from '../../server/compile-budget.js';
import { nodeEntry } from '../support/toolproof-process.js';
import { patternSchema } from './pattern-schema.js';

const run = promisify(execFile);

const limited = (units: number) => ({
  take(cost: number) {
    if (cost > units) return false;
    units -= cost;
    return true;
  },
});

describe('compile cost is estimated from the schema, not its size', () => {
  it('a long description costs little, many patterns cost much', () => {
    const described = {
      type: 'object',
      description: 'd'.repeat(100_000),
      properties: { a: { type: 'string' } },
    };
    expect(estimateCompileCost(described)).toBeLessThan(1000);
    expect(estimateCompileCost(patternSchema('x', 500).schema)).toBeGreaterThan(MAX_COMPILE_COST);
  });

  it('a schema past MAX_COMPILE_COST is not compiled: reported, nothing enforced', () => {
    const { schema, args } = patternSchema('cost', 500);
    const r = validateArguments(schema, { ...args, p0: 'no match' });
    expect(r).toMatchObject({ valid: true, issues: [], unenforcedBy: 'cost' });
    expect(r.schemaError).toContain('too costly');
  });

  it('a spent budget leaves the call unchecked (and uncached: with budget left it compiles)', () => {
    const { schema, args } = patternSchema('budget', 20);
    const bad = { ...args, p3: 'no match' };
    const refused = validateArguments(schema, bad, limited(10));
    expect(refused).toMatchObject({ valid: true, unenforcedBy: 'budget' });
    expect(refused.schemaError).toContain('budget');
    const checked = validateArguments(schema, bad, limited(1_000_000));
    expect(checked.valid).toBe(false);
    expect(checked.issues[0]?.path).toBe('/p3');
  });

  it('patterns compile lazily, on first test, and are shared by every schema', () => {
    const { schema } = patternSchema('lazy', 50);
    const before = patternTableStats().entries;
    // Only p1 is present: only its pattern is compiled.
    expect(validateArguments(schema, { p1: 'abc-lazy-1foo1' }).valid).toBe(true);
    expect(patternTableStats().entries - before).toBe(1);
    // The same pattern in another schema: already compiled.
    const other = { type: 'object', properties: { q: (schema.properties as Record<string, unknown>).p1 } };
    validateArguments(other, { q: 'abc-lazy-1foo1' });
    expect(patternTableStats().entries - before).toBe(1);
  });

  it('a pattern the budget cannot pay for is not enforced, and said so', () => {
    const { schema, args } = patternSchema('pat', 10);
    // Enough for the schema and the validation's steps (up to two chunks past the first), not
    // for a pattern (PATTERN_COMPILE_COST, 600 units).
    const r = validateArguments(
      schema,
      { ...args, p2: 'no match' },
      limited(estimateCompileCost(schema) + (FIRST_STEPS + 2 * CHUNK_STEPS) / STEPS_PER_UNIT + 10),
    );
    expect(r.valid).toBe(true);
    expect(r.unenforcedBy).toBe('budget');
    expect(r.skipped?.[0]).toContain('compile budget');
  });

  it('the process budget refills with time; a request budget never exceeds its own limit', () => {
    let now = 0;
    const budgets = new CompileBudgets(() => now);
    const a = budgets.forRequest(400_000);
    expect(a.take(400_000)).toBe(true);
    expect(a.take(1)).toBe(false);
    const b = budgets.forRequest(400_000);
    expect(b.take(200_000)).toBe(false); // the process bucket holds 100k
    now += 1000;
    expect(b.take(200_000)).toBe(true);
  });

  it("a key draws at most half of the process's budget; another key still finds the rest", () => {
    let now = 0;
    const budgets = new CompileBudgets(() => now);
    let spentByA = 0;
    for (let i = 0; i < 20; i++) if (budgets.forRequest(60_000, 'a').take(50_000)) spentByA += 50_000;
    expect(spentByA).toBe(250_000);
    expect(budgets.forRequest(60_000, 'b').take(50_000)).toBe(true);
    now += 1000; // A's share refills at half the process's rate
    expect(budgets.forRequest(60_000, 'a').take(50_000)).toBe(true);
  });

  it('memory stays bounded over many distinct pattern-heavy schemas (before: +208 MB for 60)', async () => {
    const probe = fileURLToPath(new URL('./heap-probe.ts', import.meta.url));
    const { stdout } = await run(
      process.execPath,
      ['--expose-gc', ...nodeEntry(probe), '60', '100', 'patterns'],
      { timeout: 120_000 },
    );
    const { growthMb } = JSON.parse(stdout) as { growthMb: number };
    // Measured after: ~53 MB for 60, ~66 MB for 150 (the cost-bounded cache, the pattern table).
    expect(growthMb).toBeLessThan(120);
    expect(validatorCacheStats().cost).toBeGreaterThanOrEqual(0);
  }, 150_000);
});
