/**
 * Validates tool-call arguments against the declared JSON schema (ajv, strict off so real-world
 * schemas with unknown keywords still compile; allErrors so feedback lists every problem).
 * Compiled validators are memoized by schema JSON in a bounded map: pure from the caller's
 * view (same input, same output), and compiling once per schema keeps the hot path cheap.
 * Exported for the pipeline and metrics too.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { JsonObject } from '../../protocol/openai.js';

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
  /** Set when the declared schema itself does not compile (then nothing is enforced). */
  schemaError?: string;
}

const MAX_CACHED = 256;
const cache = new Map<string, ValidateFunction | string>();

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

// ownProperties: a required `constructor` / `toString` / `__proto__` must be an own key of the
// arguments, not something every object inherits from Object.prototype.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, ownProperties: true });
addFormats(ajv);

function compile(schema: JsonObject): ValidateFunction | string {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit !== undefined) {
    // Refresh recency so the bound evicts the least recently used schema.
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  let compiled: ValidateFunction | string;
  try {
    // $id would register globally in ajv and clash on the next compile; $schema naming a draft
    // ajv was not set up for (2020-12 from pydantic) would make the whole schema unusable.
    const { $id: _id, $schema: _draft, ...rest } = schema;
    compiled = ajv.compile(rest);
  } catch (err) {
    compiled = err instanceof Error ? err.message : String(err);
  }
  cache.set(key, compiled);
  if (cache.size > MAX_CACHED) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  return compiled;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

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
    case 'enum':
      return `${at} must be one of ${(p.allowedValues as unknown[]).map(show).join(', ')}, ${got}.`;
    case 'const':
      return `${at} must be ${show(p.allowedValue)}, ${got}.`;
    default:
      return `${at} ${err.message ?? 'is invalid'}, ${got}.`;
  }
}

/** Validates `args` (already parsed) against `schema`; no schema means anything goes. */
export function validateArguments(schema: JsonObject | undefined, args: unknown): ArgumentValidation {
  if (!schema || typeof schema !== 'object' || Object.keys(schema).length === 0)
    return { valid: true, issues: [] };
  const validate = compile(schema);
  if (typeof validate === 'string') return { valid: true, issues: [], schemaError: validate };
  if (validate(args)) return { valid: true, issues: [] };
  const issues = (validate.errors ?? []).map((err) => ({
    path: err.instancePath,
    keyword: err.keyword,
    message: describe(err, args),
  }));
  return { valid: false, issues };
}

/** Number of compiled schemas currently cached (for tests and diagnostics). */
export function validatorCacheSize(): number {
  return cache.size;
}
