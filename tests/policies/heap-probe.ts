/**
 * Child-process probe for validate-arguments.test.ts and schema-budget.test.ts (run with
 * --expose-gc): compiles COUNT distinct schemas and prints the heap growth after a full GC, in
 * MB. Mode `size` (default): schemas of ~SIZE characters of description. Mode `patterns`:
 * schemas of SIZE string properties with a distinct pattern each, validated with every property
 * present (so every pattern is compiled). Not a test file itself: vitest only collects *.test.ts.
 */
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { patternSchema } from './pattern-schema.js';

const count = Number(process.argv[2] ?? 200);
const size = Number(process.argv[3] ?? 400_000);
const mode = process.argv[4] ?? 'size';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < count && mode === 'patterns'; i++) {
  const { schema, args } = patternSchema(String(i), size);
  validateArguments(schema, args);
}
for (let i = 0; i < count && mode === 'size'; i++) {
  const schema = {
    type: 'object',
    description: `${i} ${'d'.repeat(size)}`,
    properties: { [`p${i}`]: { type: 'string', description: `${i}` } },
  };
  validateArguments(schema, { [`p${i}`]: 'x' });
}
gc();
const after = process.memoryUsage().heapUsed;
process.stdout.write(`${JSON.stringify({ growthMb: (after - before) / 1e6 })}\n`);
