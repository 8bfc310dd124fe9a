/**
 * Issue 27, "fuzz the surfaces", the parser table (part 1 of 2: the registry's parsers at
 * even positions; two files so vitest runs the halves on both workers): every registered
 * parser, fed random text made of its fixtures, markers and prose, scaled 1x and 4x in length,
 * must cost at most about 4x in CPU time and retained memory (tests/hardening/surface-budget.ts).
 * More random draws per row: TOOLPROOF_FUZZ_RUNS=5 npx vitest run tests/hardening/surface-budgets
 */
import { parserRows } from './surface-budget.js';

parserRows(0, 2);
