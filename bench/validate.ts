/**
 * npx tsx bench/validate.ts: what validating a tool call against a large client schema costs.
 * Compiles distinct ~23 KB schemas (150 properties with enums and limits) with ajv's defaults
 * (what toolproof did before) and with toolproof's validator cache, then a cache hit, and the
 * heap ajv keeps per distinct schema (run with --expose-gc for the heap rows).
 */
import { Ajv } from 'ajv';
import { validateArguments } from '../policies/kit/validation/validate-arguments.js';

function schema(seed: number): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (let i = 0; i < 150; i++) {
    props[`field_${seed}_${i}`] = {
      type: 'string',
      description: `Parameter ${i} of a tool with many options`,
      enum: ['alpha', 'beta', 'gamma', 'delta'],
      maxLength: 100,
    };
  }
  return { type: 'object', properties: props, required: Object.keys(props).slice(0, 10) };
}

const ROUNDS = 20;
const gc = (globalThis as { gc?: () => void }).gc;
const heap = (): number => {
  gc?.();
  return process.memoryUsage().heapUsed;
};

function perSchema(label: string, compileOne: (i: number) => void, offset: number): void {
  compileOne(offset - 1); // warm-up
  const before = heap();
  const start = performance.now();
  for (let i = 0; i < ROUNDS; i++) compileOne(offset + i);
  const ms = (performance.now() - start) / ROUNDS;
  const kept = gc ? `${((heap() - before) / ROUNDS / 1e6).toFixed(2)} MB kept per schema` : '';
  console.log(`${label.padEnd(36)} ${ms.toFixed(1).padStart(7)} ms per schema  ${kept}`);
}

console.log(`schema size: ${JSON.stringify(schema(0)).length} characters of JSON`);
const plain = new Ajv({ strict: false, allErrors: true, validateFormats: true });
perSchema('ajv defaults (before)', (i) => plain.compile(schema(i)), 1000);
perSchema('validator cache, first use (after)', (i) => validateArguments(schema(i), {}), 2000);
const hit = schema(2000);
const start = performance.now();
for (let i = 0; i < 200; i++) validateArguments(hit, { field_2000_0: 'alpha' });
console.log(
  `${'validator cache, hit'.padEnd(36)} ${((performance.now() - start) / 200).toFixed(2).padStart(7)} ms per call`,
);
