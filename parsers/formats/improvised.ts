/**
 * Improvised shapes: small models that no grammar steers (prompted tools, `auto` mode, a
 * backend without a parser) write a call in a shape no format defines:
 * - a JSON object naming the tool under another key than `name` and the arguments under
 *   another key than `arguments`: {"tool": "get_weather", "tool_input": {...}};
 * - an object whose only key is the tool's name: {"get_weather": {"city": "Paris"}};
 * - a Python-style call or dict after the name: get_weather(city="Paris"),
 *   get_weather({"city": "Paris"}), get_weather {"city": "Paris"};
 * - a call inside an ad-hoc tag: <get_weather>{"city": "Paris"}</get_weather> or
 *   <get_weather><city>Paris</city></get_weather>.
 * Strict gates keep precision: the call is the WHOLE output (after reasoning and one code
 * fence), the name is exactly a declared tool, and the arguments fit that tool's schema
 * (fitsSchema). A whole-output check like `json`: no per-character cost; outputs starting
 * with `{`, a fence, a declared name or `<name>` are held to the end (up to maxHeldBytes).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch } from '../engine/family.js';
import type { DeclaredTool, ParseContext } from '../types.js';
import { stripCodeFence } from '../kit/envelope.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { decodeJsonLenient, isPlainObject } from '../kit/lenient-json.js';
import { parsePythonCallList, parsePythonLiteral } from '../kit/python-literal.js';
import { coerceParamValue, createArgs, fitsSchema, paramSchema } from '../kit/schema-values.js';

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

/** What may follow a declared name at the start of an output for it to be held as a possible call. */
const NAME_FOLLOWERS = ['(', ' (', '{', ' {', '\n{', ':', ' :'];

type Found = { name: string; args: Record<string, unknown> } | null;

/** A JSON (or Python literal) object filling the whole text. */
function decodeObject(text: string): Record<string, unknown> | null {
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

function fromObject(o: Record<string, unknown>, tools: ReadonlyMap<string, DeclaredTool>): Found {
  const keys = Object.keys(o);
  // {"get_weather": {...}}: the only key is a declared tool
  if (keys.length === 1) {
    const only = keys[0] as string;
    const args = tools.has(only) ? argsOf(o[only]) : null;
    return args ? { name: only, args } : null;
  }
  if (keys.length !== 2) return null;
  const nameKey = keys.find((k) => NAME_KEYS.has(k));
  const argKey = keys.find((k) => ARG_KEYS.has(k));
  if (!nameKey || !argKey) return null;
  const name = o[nameKey];
  if (typeof name !== 'string' || !tools.has(name)) return null;
  const args = argsOf(o[argKey]);
  return args ? { name, args } : null;
}

/** name(k=v, ...), name({...}), name {...} / name: {...}; `name` is a declared tool. */
function fromNamed(t: string, tools: ReadonlyMap<string, DeclaredTool>): Found {
  const name = readName(t, 0);
  if (name === '' || !tools.has(name)) return null;
  let i = skipWs(t, name.length);
  if (t[i] === '(' && t.endsWith(')')) {
    const inner = t.slice(i + 1, -1).trim();
    if (inner.startsWith('{')) {
      const o = decodeObject(inner);
      return o ? { name, args: o } : null;
    }
    const calls = parsePythonCallList(`[${t}]`);
    return calls?.length === 1 && calls[0]?.name === name ? { name, args: calls[0].arguments } : null;
  }
  if (t[i] === ':') i = skipWs(t, i + 1);
  if (t[i] !== '{') return null;
  const o = decodeObject(t.slice(i));
  return o ? { name, args: o } : null;
}

/** <name>{...}</name> or <name><key>value</key>...</name>; `name` is a declared tool. */
function fromTag(t: string, tools: ReadonlyMap<string, DeclaredTool>): Found {
  if (!t.startsWith('<')) return null;
  const name = readName(t, 1);
  const open = `<${name}>`;
  const close = `</${name}>`;
  if (name === '' || !tools.has(name) || !t.startsWith(open) || !t.endsWith(close)) return null;
  const inner = t.slice(open.length, t.length - close.length).trim();
  if (inner === '') return { name, args: {} };
  if (inner.startsWith('{')) {
    const o = decodeObject(inner);
    return o ? { name, args: o } : null;
  }
  const tool = tools.get(name);
  const args = createArgs();
  let i = 0;
  while (i < inner.length) {
    if (inner[i] !== '<') return null;
    const key = readName(inner, i + 1);
    if (key === '' || inner[i + 1 + key.length] !== '>' || Object.hasOwn(args, key)) return null;
    const from = i + key.length + 2;
    const end = inner.indexOf(`</${key}>`, from);
    if (end < 0) return null;
    const raw = inner.slice(from, end);
    if (raw.includes('<')) return null;
    args[key] = coerceParamValue(raw.trim(), paramSchema(tool, key));
    i = skipWs(inner, end + key.length + 3);
  }
  return { name, args };
}

function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  if (ctx.tools.size === 0) return null;
  const trimmed = text.trim();
  const fenced = trimmed.startsWith('```') ? stripCodeFence(trimmed) : null;
  if (trimmed.startsWith('```') && fenced === null) return null;
  const t = (fenced ?? trimmed).trim();
  let found: Found = null;
  if (t.startsWith('{')) {
    const o = decodeObject(t);
    found = o ? fromObject(o, ctx.tools) : null;
  } else if (t.startsWith('<')) found = fromTag(t, ctx.tools);
  else found = fromNamed(t, ctx.tools);
  if (!found) return null;
  const tool = ctx.tools.get(found.name);
  if (!tool || !fitsSchema(found.args, tool)) return null;
  const repairs = fenced !== null ? ['code-fence'] : [];
  return { end: text.length, calls: [{ name: found.name, arguments: found.args, repairs }] };
}

export const improvised = defineFamily({
  name: 'improvised',
  markers: [],
  // after the strict formats (json is 90): a standard shape is always read by its own family
  priority: 95,
  backend: {},
  wholeStarts: ['{', '```'],
  // a declared name right before `(`, `{` or `:` (prose that merely starts with the name is
  // not held), or `<name>`
  wholeStartsFor: (ctx) =>
    [...ctx.tools.keys()].flatMap((n) => (n === '' ? [] : [...NAME_FOLLOWERS.map((f) => n + f), `<${n}>`])),
  matchWhole,
});
