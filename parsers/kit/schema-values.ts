/**
 * Types raw string parameter values (XML-ish formats: Qwen3-Coder, GLM, ...) by the declared
 * tool's JSON schema. A declared string stays verbatim; other types are converted only when
 * the raw text is exactly that type, otherwise the raw string is kept (schema validation later
 * reports it, rather than us guessing).
 */
import type { DeclaredTool, ParseContext, ParsedCall } from '../types.js';
import { createArgs, decodeJsonLenient, hasNonFinite, isPlainObject } from './lenient-json.js';

// families that build arguments key by key import both from here
export { createArgs } from './lenient-json.js';
import { parsePythonLiteral } from './python-literal.js';
import { StringSet } from '../../protocol/string-set.js';

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
  return isPlainObject(s) ? resolveLocalRef(s, tool!.parameters!) : undefined;
}

// Pydantic declares nested models by reference (`{"$ref": "#/$defs/Location"}`): the value is
// typed by what the pointer names. Local pointers only, a few hops (a cycle stays unresolved).
// Resolved once per parameter schema (and root): each call of the tool asks again, and a pointer
// of 100,000 segments split for each of 2,000 calls cost 20 s (500 calls of 25,000: 1.3 s).
const RESOLVED = new WeakMap<Record<string, unknown>, { root: unknown; to: Record<string, unknown> }>();

function resolveLocalRef(schema: Record<string, unknown>, root: unknown): Record<string, unknown> {
  if (typeof schema['$ref'] !== 'string') return schema;
  const known = RESOLVED.get(schema);
  if (known !== undefined && known.root === root) return known.to;
  const to = followLocalRef(schema, root);
  RESOLVED.set(schema, { root, to });
  return to;
}

function followLocalRef(schema: Record<string, unknown>, root: unknown): Record<string, unknown> {
  let s = schema;
  for (let hops = 0; hops < 8; hops++) {
    const ref = s['$ref'];
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return s;
    let node: unknown = root;
    for (const part of ref.slice(2).split('/')) {
      const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
      if (!isPlainObject(node) || !Object.hasOwn(node, key)) return s;
      node = node[key];
    }
    if (!isPlainObject(node)) return s;
    s = node;
  }
  return s;
}

// Tools written from Python or C signatures declare `float`, `int`, `bool`, `list`, `uint32` where
// JSON Schema says number, integer, boolean, array (vLLM's qwen3_coder and hy_v4 read them so):
// typed the same, text stays text. An exact alias first, then the integer / number prefixes.
const TYPE_ALIASES: Readonly<Record<string, string>> = {
  float: 'number',
  double: 'number',
  int: 'integer',
  bool: 'boolean',
  list: 'array',
  arr: 'array',
  dict: 'object',
  str: 'string',
  text: 'string',
};
const INTEGER_PREFIX = /^(?:u?int|long|short|unsigned)/;
const NUMBER_PREFIX = /^(?:float|num)/;
function canonicalType(t: string): string {
  if (Object.hasOwn(TYPE_ALIASES, t)) return TYPE_ALIASES[t]!;
  if (t === 'integer' || t === 'number') return t;
  if (INTEGER_PREFIX.test(t)) return 'integer';
  return NUMBER_PREFIX.test(t) ? 'number' : t;
}

/** The types every reader tells apart; any other name is tried (and fails) as one. */
const KNOWN_TYPES: ReadonlySet<string> = new Set([
  'string',
  'integer',
  'number',
  'boolean',
  'null',
  'object',
  'array',
  'enum',
]);

// A schema's types, each once, read once per schema object: every value of every call of the
// tool asks again, and an `anyOf` of 20,000 alternatives (or a `type` list as long) times 1,000
// calls walked and tried 20M entries (11 s of CPU, x23 for x4 each). A second type of a name
// no reader knows behaves as the first (tryType fails it, typeMatches passes it), so one stands
// for all: at most nine entries whatever the schema.
const TYPES = new WeakMap<Record<string, unknown>, readonly string[]>();

function schemaTypes(schema: Record<string, unknown>): readonly string[] {
  let types = TYPES.get(schema);
  if (types === undefined) {
    types = distinctTypes(listedTypes(schema));
    TYPES.set(schema, types);
  }
  return types;
}

function listedTypes(schema: Record<string, unknown>): readonly string[] {
  const t = schema['type'];
  if (typeof t === 'string') return [canonicalType(t)];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string').map(canonicalType);
  for (const key of ['anyOf', 'oneOf']) {
    const alts = schema[key];
    if (Array.isArray(alts)) {
      const all: string[] = [];
      for (const a of alts) if (isPlainObject(a)) for (const x of schemaTypes(a)) all.push(x);
      return all;
    }
  }
  if (Array.isArray(schema['enum'])) return ['enum'];
  return [];
}

function distinctTypes(types: readonly string[]): readonly string[] {
  const out: string[] = [];
  let other = false;
  for (const t of types) {
    if (KNOWN_TYPES.has(t)) {
      if (!out.includes(t)) out.push(t);
    } else if (!other) {
      other = true;
      out.push(t);
    }
  }
  return out;
}

const INT = /^-?\d+$/;
const NUM = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function tryType(
  raw: string,
  type: string,
  schema: Record<string, unknown>,
): { ok: true; value: unknown } | { ok: false } {
  const t = raw.trim();
  switch (type) {
    case 'string':
      return { ok: true, value: raw };
    // 1e999 is Infinity, which JSON cannot carry (it would become null): such values stay text
    case 'integer':
      if (INT.test(t) && Number.isSafeInteger(Number(t))) return { ok: true, value: Number(t) };
      if (NUM.test(t) && Number.isSafeInteger(Number(t))) return { ok: true, value: Number(t) };
      return { ok: false };
    case 'number':
      return NUM.test(t) && Number.isFinite(Number(t)) ? { ok: true, value: Number(t) } : { ok: false };
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
      // `[1e999]` would become `[null]`: a value JSON cannot carry keeps the text as written
      if (hasNonFinite(v.value)) return { ok: false };
      return (type === 'array') === Array.isArray(v.value) && (type === 'array' || isPlainObject(v.value))
        ? { ok: true, value: conformNested(v.value, schema) }
        : { ok: false };
    }
    default:
      return { ok: false };
  }
}

function decodeStructured(t: string): { ok: true; value: unknown } | { ok: false } {
  try {
    const v: unknown = JSON.parse(t);
    if (typeof v !== 'string') return { ok: true, value: v };
    // an object written as a JSON string holding its JSON or Python repr (a template that
    // serialized str(dict): vLLM test_qwen3_xml_coder_shared.py double_encoded_object_param)
    const inner = v.trim();
    if (!inner.startsWith('{') && !inner.startsWith('[')) return { ok: true, value: v };
    try {
      return { ok: true, value: JSON.parse(inner) };
    } catch {
      const p = parsePythonLiteral(inner);
      return p.ok ? p : { ok: true, value: v };
    }
  } catch {
    // JSON escaped once more (`[{\"id\": 1}]`, seen with GLM 4.6): unescape one level, retry
    if (t.includes('\\"')) {
      try {
        const once = JSON.parse(`"${t}"`);
        if (typeof once === 'string') return { ok: true, value: JSON.parse(once) };
      } catch {
        // not that either: fall through to Python literals
      }
    }
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
    const r = tryType(raw, type, schema ?? {});
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
 * An enum's values as a Set, built once per enum array (a client's enum may hold a million
 * values, and every reading of every call is checked against it: a scan per check cost
 * calls x values). Set membership is SameValueZero: the same as `===` here, but for NaN, which
 * JSON cannot spell.
 */
interface EnumSet {
  has(v: unknown): boolean;
}
const ENUM_SETS = new WeakMap<readonly unknown[], EnumSet>();
function enumSet(values: readonly unknown[]): EnumSet {
  let set = ENUM_SETS.get(values);
  if (set === undefined) {
    // Strings in a StringSet: V8 hashes a string past 16,383 characters by its length alone, and
    // a client's enum of many long values alike but for their ends cost quadratic CPU in a Set.
    const strings = new StringSet();
    const others = new Set<unknown>();
    for (const v of values) {
      if (typeof v === 'string') strings.add(v);
      else others.add(v);
    }
    set = { has: (v) => (typeof v === 'string' ? strings.has(v) : others.has(v)) };
    ENUM_SETS.set(values, set);
  }
  return set;
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
    const raw = props[key];
    if (!isPlainObject(raw)) continue;
    // a Pydantic `$ref` types the value as what it points to (an object model, usually)
    const p = resolveLocalRef(raw, schema);
    const t = p['type'];
    const types =
      typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x) => typeof x === 'string') : [];
    const v = args[key];
    if (types.length > 0 && !types.some((x) => typeMatches(v, x))) return false;
    if (Array.isArray(p['enum']) && !enumSet(p['enum']).has(v)) return false;
  }
  const required = schema?.['required'];
  if (Array.isArray(required)) {
    for (const r of required) if (typeof r === 'string' && !Object.hasOwn(args, r)) return false;
  }
  return true;
}

/**
 * Arguments that are a JSON Schema of an object (`{"type": "object", "properties": {…}}`) for a
 * tool that declares neither `type` nor `properties` as a parameter: the model echoed the tool's
 * definition (`{"name": "read_file", "parameters": {"type": "object", …}}`, an OpenAI `tools`
 * item written back), which is no call, though its name is declared and the arguments are an object.
 */
export function echoedSchema(args: Record<string, unknown>, tool: DeclaredTool | undefined): boolean {
  if (args['type'] !== 'object' || !isPlainObject(args['properties'])) return false;
  const props = tool?.parameters?.['properties'];
  return !isPlainObject(props) || (!Object.hasOwn(props, 'type') && !Object.hasOwn(props, 'properties'));
}

/**
 * An argument key that is another call's opener, `NAME(` for a declared tool NAME, and no
 * parameter of the tool: two calls fused into one object (LFM2 in Cactus wrote
 * `{"recipient": "Blob", "message": "…", "get_weather(location": "San Francisco"}` for
 * send_message then get_weather, cactus-compute/cactus#316). Neither call can be read without
 * guessing where one ends, so the envelope stays text. Returns the key, or null. Linear in the
 * keys' length.
 */
export function fusedCallKey(
  args: Record<string, unknown>,
  tool: DeclaredTool | undefined,
  tools: ReadonlyMap<string, DeclaredTool>,
): string | null {
  const props = tool?.parameters?.['properties'];
  for (const key of Object.keys(args)) {
    const paren = key.indexOf('(');
    if (paren <= 0 || !tools.has(key.slice(0, paren).trim())) continue;
    if (isPlainObject(props) && Object.hasOwn(props, key)) continue;
    return key;
  }
  return null;
}

/**
 * Models sometimes wrap all their arguments in one extra `arguments` / `input` / `properties`
 * parameter (seen with DeepSeek V3.2 DSML and MiniCPM 5, whose inner value may be a Python
 * repr). Unwrapped only when that key is not itself declared and every key inside is a
 * declared parameter, so a real parameter named `input` is never lost.
 */
export function unwrapArgumentsKey(
  args: Record<string, unknown>,
  tool: DeclaredTool | undefined,
): Record<string, unknown> {
  const keys = Object.keys(args);
  if (keys.length !== 1) return args;
  const key = keys[0] ?? '';
  if (key !== 'arguments' && key !== 'input' && key !== 'properties') return args;
  const props = tool?.parameters?.['properties'];
  if (!isPlainObject(props) || Object.hasOwn(props, key)) return args;
  let inner = args[key];
  if (typeof inner === 'string') {
    const d = decodeStructured(inner.trim());
    if (!d.ok) return args;
    inner = d.value;
  }
  if (!isPlainObject(inner)) return args;
  const innerKeys = Object.keys(inner);
  if (innerKeys.length === 0 || !innerKeys.every((k) => Object.hasOwn(props, k))) return args;
  return inner;
}

/**
 * The part of a schema that describes an object (or an array) value: the schema itself, or
 * its first `anyOf` / `oneOf` alternative of that kind (`{oneOf: [{type: integer}, {type:
 * object, properties: {max: …}}]}` types `{"max": "10"}` through the object alternative).
 */
export function alternativeFor(
  schema: Record<string, unknown> | undefined,
  kind: 'object' | 'array',
): Record<string, unknown> | undefined {
  if (!schema) return undefined;
  const own = kind === 'object' ? 'properties' : 'items';
  if (isPlainObject(schema[own])) return schema;
  // found once per schema object: each nested value of each call asks again
  let found = ALTERNATIVES.get(schema);
  if (found === undefined) {
    found = {};
    ALTERNATIVES.set(schema, found);
  }
  return (found[kind] ??= firstAlternative(schema, kind, own));
}

const ALTERNATIVES = new WeakMap<
  Record<string, unknown>,
  { object?: Record<string, unknown>; array?: Record<string, unknown> }
>();

function firstAlternative(
  schema: Record<string, unknown>,
  kind: 'object' | 'array',
  own: string,
): Record<string, unknown> {
  for (const key of ['anyOf', 'oneOf']) {
    const alts = schema[key];
    if (!Array.isArray(alts)) continue;
    for (const a of alts) if (isPlainObject(a) && (a['type'] === kind || isPlainObject(a[own]))) return a;
  }
  return schema;
}

/**
 * Text inside a decoded object or array typed by the nested schema: `{"n": "3"}` for
 * `{n: number}` gives 3 (XML-ish formats write every leaf as text), also through an
 * `anyOf` / `oneOf` alternative. Strings declared as strings, and values the schema does not
 * describe, stay as they are.
 */
function conformNested(v: unknown, whole: Record<string, unknown>): unknown {
  if (isPlainObject(v)) {
    const schema = alternativeFor(whole, 'object') ?? whole;
    const props = schema['properties'];
    if (!isPlainObject(props)) return v;
    const out = createArgs();
    for (const [k, x] of Object.entries(v)) {
      const sub = props[k];
      out[k] = isPlainObject(sub) ? conformValue(x, sub) : x;
    }
    return out;
  }
  if (Array.isArray(v)) {
    const items = (alternativeFor(whole, 'array') ?? whole)['items'];
    return isPlainObject(items) ? v.map((x) => conformValue(x, items)) : v;
  }
  return v;
}

function conformValue(x: unknown, schema: Record<string, unknown>): unknown {
  if (typeof x === 'string') {
    const types = schemaTypes(schema);
    const scalar = types.some((t) => t === 'number' || t === 'integer' || t === 'boolean');
    return scalar && !types.includes('string') ? coerceParamValue(x, schema) : x;
  }
  return conformNested(x, schema);
}

/** Types a string value may spell in JSON arguments (decodeStructuredStrings). */
const STRING_WRITTEN: ReadonlySet<string> = new Set(['object', 'array', 'integer', 'number', 'boolean']);

/**
 * JSON-argument formats: a value declared only as an object or array but written as a string
 * holding JSON or a Python repr (`"{'k': 1}"`, models double-encode) is decoded; one declared
 * only as an integer, a number or a boolean and written as its string (`"limit": "5"`, `"true"`)
 * is typed, since that string is not valid for the schema and the value it spells is
 * (a parameter that also allows a string keeps it). Returns null when nothing changed.
 */
export function decodeStructuredStrings(
  args: Record<string, unknown>,
  tool: DeclaredTool | undefined,
): Record<string, unknown> | null {
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(args)) {
    if (typeof v !== 'string') continue;
    const schema = paramSchema(tool, k);
    if (!schema) continue;
    const types = schemaTypes(schema);
    if (types.length === 0 || types.includes('string')) continue;
    for (const type of types) {
      if (!STRING_WRITTEN.has(type)) continue;
      const r = tryType(v, type, schema);
      if (r.ok) {
        // Copied into a prototype-free object: a parameter named `__proto__` stays data.
        out ??= Object.assign(createArgs(), args);
        out[k] = r.value;
        break;
      }
    }
  }
  return out;
}

/**
 * JSON-argument dialects that write every value as a string (`{"limit": "2"}`, K2-Horizon's):
 * a value declared only as a number, integer or boolean is typed like an XML-ish raw value.
 * Arguments sent as a JSON string are decoded first; anything else is returned as it came.
 */
export function typeStringScalars(args: unknown, tool: DeclaredTool | undefined): unknown {
  let obj = args;
  if (typeof obj === 'string') {
    const d = decodeJsonLenient(obj);
    if (!d || !isPlainObject(d.value)) return args;
    obj = d.value;
  }
  if (!isPlainObject(obj)) return args;
  const out = Object.assign(createArgs(), obj);
  for (const [k, v] of Object.entries(obj)) {
    const schema = paramSchema(tool, k);
    if (typeof v === 'string' && schema) out[k] = conformValue(v, schema);
  }
  return out;
}

/** A near miss is read only when every call names a declared tool with an object that fits its schema. */
export function allFitDeclared(calls: readonly ParsedCall[], ctx: ParseContext): boolean {
  for (const c of calls) {
    const t = ctx.tools.get(c.name);
    const args = c.arguments;
    if (!t || args === null || typeof args !== 'object' || Array.isArray(args)) return false;
    if (!fitsSchema(args as Record<string, unknown>, t)) return false;
  }
  return true;
}
