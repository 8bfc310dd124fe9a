/**
 * Types raw string parameter values (XML-ish formats: Qwen3-Coder, GLM, ...) by the declared
 * tool's JSON schema. A declared string stays verbatim; other types are converted only when
 * the raw text is exactly that type, otherwise the raw string is kept (schema validation later
 * reports it, rather than us guessing).
 */
import type { DeclaredTool } from '../types.js';
import { isPlainObject } from './lenient-json.js';

// families that build arguments key by key import both from here
export { createArgs } from './lenient-json.js';
import { parsePythonLiteral } from './python-literal.js';

/** The declared schema for one parameter, or undefined. */
export function paramSchema(
  tool: DeclaredTool | undefined,
  param: string,
): Record<string, unknown> | undefined {
  const props = tool?.parameters?.['properties'];
  if (!isPlainObject(props)) return undefined;
  // own keys only: a parameter named `constructor` or `__proto__` must not find Object's
  if (!Object.hasOwn(props, param)) return undefined;
  const s = props[param];
  return isPlainObject(s) ? s : undefined;
}

function schemaTypes(schema: Record<string, unknown>): string[] {
  const t = schema['type'];
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  for (const key of ['anyOf', 'oneOf']) {
    const alts = schema[key];
    if (Array.isArray(alts)) return alts.flatMap((a) => (isPlainObject(a) ? schemaTypes(a) : []));
  }
  if (Array.isArray(schema['enum'])) return ['enum'];
  return [];
}

const INT = /^-?\d+$/;
const NUM = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function tryType(raw: string, type: string): { ok: true; value: unknown } | { ok: false } {
  const t = raw.trim();
  switch (type) {
    case 'string':
      return { ok: true, value: raw };
    case 'integer':
      if (INT.test(t)) return { ok: true, value: Number(t) };
      if (NUM.test(t) && Number.isInteger(Number(t))) return { ok: true, value: Number(t) };
      return { ok: false };
    case 'number':
      return NUM.test(t) ? { ok: true, value: Number(t) } : { ok: false };
    case 'boolean': {
      const l = t.toLowerCase();
      return l === 'true'
        ? { ok: true, value: true }
        : l === 'false'
          ? { ok: true, value: false }
          : { ok: false };
    }
    case 'null':
      return t === 'null' || t === 'None' ? { ok: true, value: null } : { ok: false };
    case 'object':
    case 'array': {
      const v = decodeStructured(t);
      if (!v.ok) return v;
      return (type === 'array') === Array.isArray(v.value) && (type === 'array' || isPlainObject(v.value))
        ? v
        : { ok: false };
    }
    default:
      return { ok: false };
  }
}

function decodeStructured(t: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch {
    return parsePythonLiteral(t);
  }
}

export interface CoerceOptions {
  /** For parameters without a schema: keep as string (Qwen3-Coder), or decode JSON-looking text (GLM). */
  untyped?: 'string' | 'json';
}

/** Converts one raw parameter value by its schema. */
export function coerceParamValue(
  raw: string,
  schema: Record<string, unknown> | undefined,
  opts: CoerceOptions = {},
): unknown {
  const types = schema ? schemaTypes(schema) : [];
  if (types.length === 0 || types.includes('enum')) {
    if (opts.untyped !== 'json') return raw;
    const t = raw.trim();
    if (/^[[{"]/.test(t) || t === 'true' || t === 'false' || t === 'null' || NUM.test(t)) {
      try {
        return JSON.parse(t);
      } catch {
        return raw;
      }
    }
    return raw;
  }
  // non-string types first: ["integer","string"] should give 3 for "3"
  const ordered = [...types.filter((x) => x !== 'string'), ...types.filter((x) => x === 'string')];
  for (const type of ordered) {
    const r = tryType(raw, type);
    if (r.ok) return r.value;
  }
  return raw;
}

function typeMatches(v: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isPlainObject(v);
    default:
      return true;
  }
}

/**
 * A light structural check of arguments against a tool's parameter schema, for shapes no
 * format defines (parsers stay pure: no ajv here). Stricter than JSON Schema on purpose:
 * every key must be a declared property (a tool without properties takes `{}` only), every
 * required key must be an own key, and declared primitive types and enums must match.
 */
export function fitsSchema(args: Record<string, unknown>, tool: DeclaredTool): boolean {
  const schema = tool.parameters;
  const props = isPlainObject(schema?.['properties'])
    ? (schema['properties'] as Record<string, unknown>)
    : {};
  for (const key of Object.keys(args)) {
    if (!Object.hasOwn(props, key)) return false;
    const p = props[key];
    if (!isPlainObject(p)) continue;
    const t = p['type'];
    const types =
      typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x) => typeof x === 'string') : [];
    const v = args[key];
    if (types.length > 0 && !types.some((x) => typeMatches(v, x))) return false;
    if (Array.isArray(p['enum']) && !p['enum'].some((e) => e === v)) return false;
  }
  const required = schema?.['required'];
  if (Array.isArray(required)) {
    for (const r of required) if (typeof r === 'string' && !Object.hasOwn(args, r)) return false;
  }
  return true;
}
