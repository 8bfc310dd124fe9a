/**
 * Validates tool-call arguments against the declared JSON schema (ajv, strict off so real-world
 * schemas with unknown keywords still compile; allErrors so feedback lists every problem).
 * Pure from the caller's view (same input, same output); compiled validators are cached in
 * validator-cache.ts, bounded by the memory they hold.
 *
 * Everything here runs client schemas on model-written data, on the event loop every request
 * shares, so every step is linear or capped: patterns run on RE2 (linear-regexp.ts),
 * `uniqueItems` hashes (unique-items.ts), arguments deeper than MAX_ARGUMENT_DEPTH are refused
 * before ajv recurses into them, at most MAX_ISSUES problems are described (each preview writes
 * ~80 characters, never the whole value), and whatever ajv throws (at compile or validate time)
 * becomes a reported, skipped check, never an exception.
 */
import type { ErrorObject } from 'ajv';
import type { JsonObject } from '../../../protocol/openai.js';
import { deeperThan } from '../../../protocol/json-depth.js';
import type { CompileBudget } from '../../types.js';
import { preview } from './json-shape.js';
import type { PatternSkip } from './linear-regexp.js';
import { MeterSpent, withMeter } from './step-meter.js';
import { type CompileRefusal, compileSchema, runValidator, validatorCacheStats } from './validator-cache.js';

export interface ArgumentIssue {
  /** JSON pointer of the offending value ('' = the whole arguments object). */
  path: string;
  keyword: string;
  /** One sentence a model can act on, e.g. "`days` must be an integer, got \"three\"." */
  message: string;
}

export interface ArgumentValidation {
  valid: boolean;
  issues: ArgumentIssue[];
  /** Set when the declared schema could not be compiled or applied (then nothing is enforced). */
  schemaError?: string;
  /** Parts of the schema left unenforced (patterns RE2 cannot run), each with its reason. */
  skipped?: string[];
  /**
   * Why checking fell short, when it did: 'budget' (the compile budget was spent: the schema or
   * a pattern was not compiled), 'cost' (the schema is too costly to compile), 'schema' (it could
   * not be compiled or applied), 'pattern' (a pattern RE2 cannot run).
   */
  unenforcedBy?: CompileRefusal | 'pattern';
}

/** Nesting levels accepted in arguments; deeper ones are invalid (ajv would recurse per level). */
export const MAX_ARGUMENT_DEPTH = 128;
/** Problems described per call; the rest are counted in one closing issue. */
export const MAX_ISSUES = 20;

const show = (value: unknown): string => preview(value, 80);

function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === '') return root;
  let cur: unknown = root;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function label(pointer: string): string {
  if (pointer === '') return 'the arguments';
  return `\`${pointer.slice(1).split('/').join('.')}\``;
}

function child(pointer: string, key: string): string {
  return `\`${pointer === '' ? key : `${pointer.slice(1).split('/').join('.')}.${key}`}\``;
}

const ARTICLE: Record<string, string> = {
  integer: 'an integer',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

const FEWER_MORE: Record<string, [string, string]> = {
  minLength: ['fewer', 'characters'],
  maxLength: ['more', 'characters'],
  minItems: ['fewer', 'items'],
  maxItems: ['more', 'items'],
  minProperties: ['fewer', 'properties'],
  maxProperties: ['more', 'properties'],
  additionalItems: ['more', 'items'],
  unevaluatedItems: ['more', 'items'],
};

/**
 * ajv's own wording, rebuilt from the error's params: the validators are compiled without
 * messages (a third of the compile time of a large schema goes into writing them).
 */
function messageOf(keyword: string, p: Record<string, unknown>): string {
  const limits = FEWER_MORE[keyword];
  if (limits) return `must NOT have ${limits[0]} than ${String(p.limit)} ${limits[1]}`;
  switch (keyword) {
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `must be ${String(p.comparison)} ${String(p.limit)}`;
    case 'multipleOf':
      return `must be multiple of ${String(p.multipleOf)}`;
    case 'pattern':
      return `must match pattern ${show(p.pattern)}`;
    case 'format':
      return `must match format ${show(p.format)}`;
    case 'oneOf':
      return 'must match exactly one schema in oneOf';
    case 'anyOf':
      return 'must match a schema in anyOf';
    case 'not':
      return 'must NOT be valid';
    case 'if':
      return `must match "${String(p.failingKeyword)}" schema`;
    case 'contains':
      return 'must contain a valid item';
    case 'dependencies':
    case 'dependentRequired':
      return `must have ${show(p.deps)} when ${show(p.property)} is present`;
    case 'propertyNames':
      return `has a property name that is not valid: ${show(p.propertyName)}`;
    case 'unevaluatedProperties':
      return 'must NOT have unevaluated properties';
    default:
      return 'is invalid';
  }
}

function describe(err: ErrorObject, args: unknown): string {
  const at = label(err.instancePath);
  const got = `got ${show(valueAt(args, err.instancePath))}`;
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'type': {
      const types = String(p.type).split(',');
      const want = types.map((t) => ARTICLE[t] ?? `a ${t}`).join(' or ');
      return `${at} must be ${want}, ${got}.`;
    }
    case 'required':
      return `${child(err.instancePath, String(p.missingProperty))} is required but missing.`;
    case 'additionalProperties':
      return `${child(err.instancePath, String(p.additionalProperty))} is not a known parameter.`;
    case 'enum': {
      // A client enum can hold thousands of values: list the first few, count the rest.
      const allowed = p.allowedValues as unknown[];
      const listed = allowed.slice(0, MAX_ISSUES).map(show).join(', ');
      const more = allowed.length > MAX_ISSUES ? ` (and ${allowed.length - MAX_ISSUES} more)` : '';
      return `${at} must be one of ${listed}${more}, ${got}.`;
    }
    case 'const':
      return `${at} must be ${show(p.allowedValue)}, ${got}.`;
    default:
      return `${at} ${err.message ?? messageOf(err.keyword, p)}, ${got}.`;
  }
}

function describeSkip(s: PatternSkip): string {
  const p = s.pattern;
  return `pattern ${JSON.stringify(p.length > 60 ? `${p.slice(0, 57)}...` : p)} is not enforced (${s.reason})`;
}

function withSkipped(
  result: ArgumentValidation,
  skipped: string[],
  patterns: PatternSkip[] = [],
): ArgumentValidation {
  if (skipped.length === 0 && patterns.length === 0) return result;
  const all = patterns.length > 0 ? skipped.concat(patterns.map(describeSkip)) : skipped;
  const by = patterns.some((p) => p.budget) ? 'budget' : 'pattern';
  return { ...result, skipped: all, unenforcedBy: result.unenforcedBy ?? by };
}

/**
 * Validates `args` (already parsed) against `schema`; no schema means anything goes. `budget`
 * pays for what has to be compiled first (validator-cache.ts); what it cannot pay for is not
 * enforced, and said so.
 */
export function validateArguments(
  schema: JsonObject | undefined,
  args: unknown,
  budget?: CompileBudget,
): ArgumentValidation {
  if (!schema || typeof schema !== 'object' || Object.keys(schema).length === 0)
    return { valid: true, issues: [] };
  const compiled = compileSchema(schema, budget);
  if ('error' in compiled)
    return { valid: true, issues: [], schemaError: compiled.error, unenforcedBy: compiled.refusal };
  if (deeperThan(args, MAX_ARGUMENT_DEPTH)) {
    return withSkipped(
      {
        valid: false,
        issues: [
          {
            path: '',
            keyword: 'maxDepth',
            message: `the arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels; flatten them.`,
          },
        ],
      },
      compiled.skipped,
    );
  }
  const { validate } = compiled;
  let ok: boolean;
  let patterns: PatternSkip[];
  try {
    const run = runValidator(budget, () => withMeter(budget, () => validate(args) === true));
    ok = run.value;
    patterns = run.skipped;
  } catch (err) {
    if (err instanceof MeterSpent)
      return withSkipped(
        { valid: true, issues: [], schemaError: err.message, unenforcedBy: err.byBudget ? 'budget' : 'cost' },
        compiled.skipped,
      );
    // A schema that recurses into itself without consuming data (`{"$ref": "#"}`) overflows the
    // stack on any input: the schema is at fault, not the model, so nothing is enforced.
    const reason = err instanceof Error ? err.message : String(err);
    return withSkipped(
      {
        valid: true,
        issues: [],
        schemaError: `the schema could not be applied (${reason})`,
        unenforcedBy: 'schema',
      },
      compiled.skipped,
    );
  }
  if (ok) return withSkipped({ valid: true, issues: [] }, compiled.skipped, patterns);
  const errors = validate.errors ?? [];
  const issues: ArgumentIssue[] = errors.slice(0, MAX_ISSUES).map((err) => ({
    path: err.instancePath,
    keyword: err.keyword,
    message: describe(err, args),
  }));
  if (errors.length > MAX_ISSUES) {
    issues.push({
      path: '',
      keyword: 'more',
      message: `...and ${errors.length - MAX_ISSUES} more problems of the same kinds.`,
    });
  }
  return withSkipped({ valid: false, issues }, compiled.skipped, patterns);
}

/** Number of compiled schemas currently cached (for tests and diagnostics). */
export function validatorCacheSize(): number {
  return validatorCacheStats().entries;
}
