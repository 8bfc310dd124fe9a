/**
 * Client-written regular expressions (a tool schema's `pattern` and `patternProperties`) run on
 * model-written strings, on the event loop every request shares. JavaScript's own engine
 * backtracks: `^(a+)+$` against 28 characters took 3.3 s. Here they run on RE2 (the pure-JS
 * `re2js` port: no native build), whose matching time is linear in the input.
 *
 * A pattern RE2 cannot compile (backreferences, lookaround, a repeat count over 1000) or whose
 * program is too large is NOT enforced: it matches everything, and the validation reports it. It
 * is never handed to the backtracking engine.
 */
import { RE2JS } from 're2js';
import { charge } from './step-meter.js';

/** RE2 instructions one pattern may compile to: matching costs up to this much per character. */
export const MAX_PATTERN_PROGRAM = 600;

export interface LinearRegExp {
  test(text: string): boolean;
  /** ajv dedups compiled patterns by this string: it must differ per pattern. */
  toString(): string;
}

export type PatternOutcome = { ok: true; re: RE2JS } | { ok: false; reason: string };

function programSize(re: RE2JS): number {
  const prog = (re.re2() as { prog?: { inst?: unknown[] } }).prog;
  return Array.isArray(prog?.inst) ? prog.inst.length : 0;
}

/** Compiles an ECMAScript pattern (JSON Schema's dialect) for RE2, or says why it cannot. */
export function compileLinear(pattern: string, flags = 0): PatternOutcome {
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), flags);
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
  const size = programSize(re);
  if (size > MAX_PATTERN_PROGRAM)
    return {
      ok: false,
      reason: `the pattern compiles to ${size} instructions (limit ${MAX_PATTERN_PROGRAM})`,
    };
  return { ok: true, re };
}

/** Patterns the shared table keeps compiled (least recently used first out). */
export const PATTERN_TABLE_ENTRIES = 1024;
/** RE2 instructions the shared table may hold in all (~1 KB of heap each, measured). */
export const PATTERN_TABLE_PROGRAM = 64 * 1024;
/** Compile cost charged for one pattern's RE2 compile (COST units, as validator-cache.ts). */
export const PATTERN_COMPILE_COST = 600;

/** A pattern left unenforced during a validation, and why. */
export interface PatternSkip {
  pattern: string;
  reason: string;
  /** Skipped because the budget was spent (not the pattern's own fault). */
  budget: boolean;
}

interface TableEntry {
  outcome: PatternOutcome;
  size: number;
  /** Tested since it was last passed over by an eviction (its second chance). */
  used: boolean;
}

/**
 * Compiled patterns shared by every schema and generation: a pattern repeated across tools and
 * requests is compiled once. Evicted oldest first, but one tested since an eviction last passed
 * it gets a second chance (moved to the end, unmarked): a hit only sets a flag. It moved the
 * entry to the end on every test, and a Map keeps a deleted entry in its bucket until it is next
 * rehashed, so each test of a full table cost ~4.5x a test of a near-empty one. Part of
 * policies/' one global, the validator memo (validator-cache.ts).
 */
const table = new Map<string, TableEntry>();
let tableSize = 0;

/** What the validation in progress may still spend, and what it skipped (one at a time: sync). */
let activeBudget: { take(cost: number): boolean } | undefined;
let skips: PatternSkip[] | undefined;

function lookup(pattern: string): TableEntry | undefined {
  const hit = table.get(pattern);
  if (hit !== undefined) {
    hit.used = true;
    return hit;
  }
  if (activeBudget && !activeBudget.take(PATTERN_COMPILE_COST)) return undefined;
  const outcome = compileLinear(pattern);
  const size = outcome.ok ? Math.max(1, programSize(outcome.re)) : 1;
  const entry: TableEntry = { outcome, size, used: false };
  table.set(pattern, entry);
  tableSize += size;
  // Each entry is passed over at most once per insertion that finds it used: amortized O(1).
  for (const [key, old] of table) {
    if (table.size <= PATTERN_TABLE_ENTRIES && tableSize <= PATTERN_TABLE_PROGRAM) break;
    table.delete(key);
    if (old.used) {
      old.used = false;
      table.set(key, old);
    } else tableSize -= old.size;
  }
  return entry;
}

function skip(pattern: string, reason: string, budget: boolean): void {
  if (!skips) return;
  if (skips.length < 64 && !skips.some((s) => s.pattern === pattern)) skips.push({ pattern, reason, budget });
}

/**
 * Runs `fn` (a validation) with `budget` paying for the patterns it compiles; returns what `fn`
 * returned and the patterns it left unenforced.
 */
export function withPatternBudget<T>(
  budget: { take(cost: number): boolean } | undefined,
  fn: () => T,
): { value: T; skipped: PatternSkip[] } {
  const outerBudget = activeBudget;
  const outerSkips = skips;
  activeBudget = budget;
  skips = [];
  try {
    const value = fn();
    return { value, skipped: skips };
  } finally {
    activeBudget = outerBudget;
    skips = outerSkips;
  }
}

/**
 * An ajv `code.regExp` engine. ajv calls it for every pattern while it compiles a schema; the
 * RE2 compile waits for the pattern's first test (shared table, paid from the active budget).
 * A pattern that cannot be compiled, or not now, matches everything and is reported as skipped.
 */
export function createLinearEngine() {
  const engine = (pattern: string, _flags: string): LinearRegExp => ({
    test(text: string): boolean {
      const entry = lookup(pattern);
      if (entry === undefined) {
        skip(pattern, 'the compile budget is spent', true);
        return true;
      }
      const { outcome } = entry;
      if (!outcome.ok) {
        skip(pattern, outcome.reason, false);
        return true;
      }
      // RE2 reads the text once, each character through up to its program's instructions (67 ns
      // a character at 36 instructions): that much on the validation's step meter.
      charge(text.length * entry.size);
      return outcome.re.test(text);
    },
    toString: () => `re2:${pattern}`,
  });
  // Only read by ajv's standalone code generation, which toolproof does not use.
  engine.code = 'linear-regexp';
  return engine;
}

/** Entries and RE2 instructions the shared pattern table holds (tests, diagnostics). */
export function patternTableStats(): { entries: number; program: number } {
  return { entries: table.size, program: tableSize };
}
