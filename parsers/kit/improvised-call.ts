/**
 * Readers for calls written in shapes no format defines (the `improvised` family, and the
 * variants families meet inside their own envelopes: a Python-style call in a `<tool_call>`
 * tag, flat arguments next to the name). Every reader needs the request's declared tools: a
 * name is only a call when it is exactly a declared tool, and the caller checks the arguments
 * against that tool's schema (fitsSchema) before accepting anything. Pure; linear in the text.
 */
import type { DeclaredTool } from '../types.js';
import { readName, skipWs } from './json-scan.js';
import { createArgs, decodeJsonLenient, isPlainObject } from './lenient-json.js';
import { parsePythonLiteral } from './python-literal.js';
import { fitsSchema } from './schema-values.js';

export interface ImprovisedCall {
  name: string;
  args: Record<string, unknown>;
}

type Tools = ReadonlyMap<string, DeclaredTool>;

/** Keys models use for the tool's name and for its arguments (seen in agent prompts and issues). */
const NAME_KEYS = new Set([
  'name',
  'tool',
  'tool_name',
  'toolName',
  'function',
  'function_name',
  'action',
  'command',
]);
const ARG_KEYS = new Set([
  'arguments',
  'args',
  'parameters',
  'params',
  'input',
  'inputs',
  'tool_input',
  'toolInput',
  'action_input',
  'kwargs',
]);
/** Keys an OpenAI-style wrapper may carry around {name, arguments}: {"type": "function", "function": {…}}. */
const WRAPPER_KEYS = new Set(['id', 'type', 'function']);

/** A JSON (or Python literal) object filling the whole text. */
export function decodeObject(text: string): Record<string, unknown> | null {
  const d = decodeJsonLenient(text, { allowMissingClose: false });
  if (d) return isPlainObject(d.value) ? d.value : null;
  const p = parsePythonLiteral(text);
  return p.ok && isPlainObject(p.value) ? p.value : null;
}

/** Arguments given as an object, or as a JSON string of one. */
function argsOf(v: unknown): Record<string, unknown> | null {
  if (isPlainObject(v)) return v;
  if (typeof v === 'string') {
    const d = decodeJsonLenient(v);
    return d && isPlainObject(d.value) ? d.value : null;
  }
  return null;
}

/**
 * An object that names a declared tool: {"get_weather": {…}}, {"tool": …, "tool_input": …}
 * (any name key with any argument key), {"type": "function", "function": {…}}, or the name
 * with the arguments flat beside it ({"name": "get_weather", "city": "Paris"}, small models
 * forget the `arguments` level). Arguments are not schema-checked here.
 */
export function callFromLooseObject(o: Record<string, unknown>, tools: Tools): ImprovisedCall | null {
  const keys = Object.keys(o);
  const fn = o['function'];
  if (isPlainObject(fn)) {
    if (!keys.every((k) => WRAPPER_KEYS.has(k))) return null;
    if (o['type'] !== undefined && o['type'] !== 'function') return null;
    return callFromLooseObject(fn, tools);
  }
  if (keys.length === 1) {
    const only = keys[0] as string;
    const args = tools.has(only) ? argsOf(o[only]) : null;
    return args ? { name: only, args } : null;
  }
  const nameKeys = keys.filter((k) => NAME_KEYS.has(k));
  if (nameKeys.length !== 1) return null;
  const nameKey = nameKeys[0] as string;
  const name = o[nameKey];
  if (typeof name !== 'string' || !tools.has(name)) return null;
  // `type: "function"` beside the name is the Llama 3.2 shape, not an argument
  const rest = keys.filter((k) => k !== nameKey && !(k === 'type' && o[k] === 'function'));
  const argKeys = rest.filter((k) => ARG_KEYS.has(k));
  // a string `id` beside the name and the arguments is the call id the wire shape carries
  // (Devstral copying {"tool_calls": [{"name", "arguments", "id"}]}, llama.cpp#14697)
  const idBeside = rest.length === 2 && typeof o['id'] === 'string' && rest.includes('id');
  if (argKeys.length === 1 && (rest.length === 1 || idBeside)) {
    const args = argsOf(o[argKeys[0] as string]);
    return args ? { name, args } : null;
  }
  if (argKeys.length > 0 || rest.length === 0) return null;
  const args = createArgs();
  for (const k of rest) args[k] = o[k];
  return { name, args };
}

/** Splits `a, b=[1, 2], c="x, y"` at its top-level commas; null on unbalanced brackets or quotes. */
function splitTopLevel(s: string): string[] | null {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (quote !== '') {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (--depth < 0) return null;
    } else if (c === ',' && depth === 0) {
      parts.push(s.slice(from, i));
      from = i + 1;
    }
  }
  if (depth !== 0 || quote !== '') return null;
  parts.push(s.slice(from));
  return parts.map((p) => p.trim()).filter((p, i, all) => p !== '' || i < all.length - 1);
}

/**
 * A bare word run (`Antwerp`, `New York`): small models drop the quotes of a string value. Not
 * an expression (`1+1`, `a*b`; a `/` stays allowed for paths): that is code, not a value, and stays text.
 */
const BARE = /^[^\s'"()[\]{}<>,:=+*%|&^~][^'"()[\]{}<>,:=+*%|&^~]*$/;

/**
 * Arguments written between a call's parentheses: `k="v", n=2` (Python), `k: "v"` or `k: v`
 * (Gemma writes the schema's own `key: value` notation), or a single positional value for a
 * tool with exactly one parameter. null when any part is not one of these.
 */
function readArgList(inner: string, tool: DeclaredTool): Record<string, unknown> | null {
  const parts = splitTopLevel(inner);
  if (parts === null) return null;
  const args = createArgs();
  for (const part of parts) {
    const key = readName(part, 0);
    const at = skipWs(part, key.length);
    if (key !== '' && (part[at] === '=' || part[at] === ':')) {
      if (Object.hasOwn(args, key)) return null;
      const raw = part.slice(at + 1).trim();
      const lit = parsePythonLiteral(raw);
      if (lit.ok) args[key] = lit.value;
      else if (BARE.test(raw)) args[key] = raw;
      else return null;
      continue;
    }
    // positional: only unambiguous for a one-parameter tool, and only as a quoted literal
    const props = tool.parameters?.['properties'];
    const only = isPlainObject(props) ? Object.keys(props) : [];
    const lit = parsePythonLiteral(part);
    if (parts.length !== 1 || only.length !== 1 || !lit.ok) return null;
    args[only[0] as string] = lit.value;
  }
  return args;
}

/**
 * `name(k=v, …)`, `name(k: v)`, `name('v')`, `name({…})`, `name {…}` or `name: {…}` filling
 * the whole text, `name` a declared tool.
 */
export function callFromNamed(t: string, tools: Tools): ImprovisedCall | null {
  const name = readName(t, 0);
  const tool = name === '' ? undefined : tools.get(name);
  if (!tool) return null;
  let i = skipWs(t, name.length);
  if (t[i] === '(' && t.endsWith(')')) {
    const inner = t.slice(i + 1, -1).trim();
    if (inner === '') return { name, args: createArgs() };
    if (inner.startsWith('{') && inner.endsWith('}')) {
      const o = decodeObject(inner);
      if (o) return { name, args: o };
      // a JavaScript object literal with bare keys: {city: "London"}
      const args = readArgList(inner.slice(1, -1), tool);
      return args ? { name, args } : null;
    }
    const args = readArgList(inner, tool);
    return args ? { name, args } : null;
  }
  if (t[i] === ':') i = skipWs(t, i + 1);
  if (t[i] !== '{') return null;
  const o = decodeObject(t.slice(i));
  return o ? { name, args: o } : null;
}

/**
 * One value where the schema declares a list of such values (`"domain": "light"` for a
 * `domain: string[]`, Home Assistant intents under small models): the one-element list.
 * Only for a declared array whose `items` type the value already has; nothing else is touched.
 */
function liftScalarsToLists(
  args: Record<string, unknown>,
  tool: DeclaredTool,
): Record<string, unknown> | null {
  const props = tool.parameters?.['properties'];
  if (!isPlainObject(props)) return null;
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(args)) {
    const p = Object.hasOwn(props, k) ? props[k] : undefined;
    if (!isPlainObject(p) || p['type'] !== 'array' || !isPlainObject(p['items'])) continue;
    const item = p['items']['type'];
    const fits =
      (item === 'string' && typeof v === 'string') ||
      ((item === 'number' || item === 'integer') && typeof v === 'number');
    if (!fits || (item === 'integer' && !Number.isInteger(v))) continue;
    out ??= { ...args };
    out[k] = [v];
  }
  return out;
}

/**
 * The call when it names a declared tool AND its arguments fit that tool's schema (after
 * lifting a lone value into the list the schema declares, if that is all that was wrong).
 */
export function gated(found: ImprovisedCall | null, tools: Tools): ImprovisedCall | null {
  const tool = found ? tools.get(found.name) : undefined;
  if (!found || !tool) return null;
  if (fitsSchema(found.args, tool)) return found;
  const lifted = liftScalarsToLists(found.args, tool);
  return lifted && fitsSchema(lifted, tool) ? { name: found.name, args: lifted } : null;
}
