/**
 * Client-written regular expressions (a tool schema's `pattern` and `patternProperties`) run on
 * model-written strings, on the event loop every request shares. JavaScript's own engine
 * backtracks: `^(a+)+$` against 28 characters took 3.3 s. Here they run on RE2 (the pure-JS
 * `re2js` port: no native build), whose matching time is linear in the input.
 *
 * A pattern RE2 cannot compile (backreferences, lookaround, a repeat count over 1000) or whose
 * program is too large is NOT enforced: it matches everything, and the compile reports it. It is
 * never handed to the backtracking engine.
 */
import { RE2JS } from 're2js';

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

/**
 * An ajv `code.regExp` engine. `onSkip` hears every pattern left unenforced (ajv calls the
 * engine while it compiles a schema, so the caller collects them per compile).
 */
export function createLinearEngine(onSkip: (pattern: string, reason: string) => void) {
  const engine = (pattern: string, _flags: string): LinearRegExp => {
    const compiled = compileLinear(pattern);
    if (!compiled.ok) {
      onSkip(pattern, compiled.reason);
      return { test: () => true, toString: () => `skipped:${pattern}` };
    }
    const re = compiled.re;
    return { test: (text) => re.test(text), toString: () => `re2:${pattern}` };
  };
  // Only read by ajv's standalone code generation, which toolproof does not use.
  engine.code = 'linear-regexp';
  return engine;
}
