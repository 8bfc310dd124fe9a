/**
 * Child-process probe for validate-arguments.test.ts (run with --expose-gc): compiles COUNT
 * distinct schemas of ~SIZE characters each and prints the heap growth after a full GC, in MB.
 * Not a test file itself: vitest only collects *.test.ts.
 */
import { validateArguments } from '../../policies/support/validate-arguments.js';

const count = Number(process.argv[2] ?? 200);
const size = Number(process.argv[3] ?? 400_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < count; i++) {
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
