/**
 * The schema-guided reader of improvised calls (the `improvised` family): small models that no
 * grammar steers write a call in whatever shape they like. Instead of a list of known shapes
 * and keys, the whole output (after reasoning, fences and end-of-turn tokens, stripped by the
 * family) is parsed as a short sequence of structured values, and each value is searched for
 * the readings in which it is a call:
 *
 * 1. parse: JSON or Python-literal values (`{…}`, `[…]`, a JSON string), Python-style calls
 *    (`name(k=v, 'positional')`, dotted names, a call as an argument of another), a name before
 *    an object (`name {…}`, `name: {…}`, `[name]\n{…}`), and XML-ish elements
 *    (`<tag attr="v">…</tag>`, `<tag … />`), separated by blanks, commas or stray
 *    `<tool_call>` tags. Anything else and the output is not a structured value: no call.
 * 2. read: a reading names exactly one declared tool, the exact name (or, in three shapes only,
 *    the name in another case or under `functions.`/`default_api.`: see `renamed` below):
 *    - as a string value under any key, with the arguments as the object under any key beside
 *      it (or a JSON string of one), or flat beside it;
 *    - as a key, its value the arguments;
 *    - as a tag or an attribute value of an element, the arguments its attributes and
 *      children (`<key>v</key>`, `<parameter name="key">v</parameter>`, one JSON object, or
 *      the text for a one-parameter tool), typed by the schema;
 *    - as a function name, keyword arguments by name, positional ones onto the parameters in
 *      declaration order when that is unambiguous (one parameter, or as many values as
 *      required parameters);
 *    and the arguments must fit the tool's schema (fitsSchema: every key declared, required
 *    keys present, types and enums). An object, element or call that is no call itself is a
 *    wrapper: the values one level inside it are read (an array inside is a list of calls), and
 *    a string that is itself a structured value is decoded and read.
 * 3. accept: a value is a call only when exactly one distinct reading fits; every value of the
 *    sequence must be one (all or nothing).
 *
 * Bounded: nesting depth, items per sequence and schema checks per output are capped, each
 * level is scanned once, so the cost is linear in the output for a fixed depth. Pure.
 */
import { pushAll } from '../../protocol/append-all.js';
import { StringSet } from '../../protocol/string-set.js';
import type { DeclaredTool } from '../types.js';
import { gated, type ImprovisedCall } from './improvised-call.js';
import { groupEnd, readName, scanJsonValue, skipWs } from './json-scan.js';
import { createArgs, decodeJsonLenient, isPlainObject } from './lenient-json.js';
import { parsePythonLiteral } from './python-literal.js';
import { coerceParamValue, paramSchema } from './schema-values.js';
import { resolveToolName } from '../engine/tool-names.js';

type Tools = ReadonlyMap<string, DeclaredTool>;

type Arg = { lit: unknown } | { item: Item };

type Item =
  | { k: 'value'; v: unknown }
  | { k: 'list'; items: Item[] }
  | { k: 'call'; name: string; pos: Arg[]; kw: [string, Arg][]; header?: true }
  | { k: 'el'; tag: string; attrs: [string, string][]; inner: string | null };

/** Nesting levels read below the top value (wrappers, decoded strings, nested calls). */
const MAX_DEPTH = 4;
/** Values in one sequence or list. */
const MAX_ITEMS = 10_000;
/** Up to this many declared tools, an output naming none of them is refused before parsing. */
const MAX_NAMES_SCANNED = 64;
/** Keys of one object that name a declared tool (as key or value). */
const MAX_NAMES_PER_OBJECT = 8;
/** Same-named elements nested in one element. */
const MAX_SAME_NESTED = 64;
/**
 * Schema checks per output, linear in its size: a few per value at most in any real output;
 * past it the output is ambiguous by construction, so not a call.
 */
const checksFor = (length: number) => 256 + (length >> 2);

// ---------------------------------------------------------------- parse

/** Tags a small model leaves around or between its calls (Jan writes `{…}</tool_call>` alone). */
const STRAY_TAGS = ['<tool_call>', '</tool_call>'];

function skipSeparators(t: string, i: number): number {
  for (;;) {
    i = skipWs(t, i);
    if (t[i] === ',') {
      i++;
      continue;
    }
    const tag = STRAY_TAGS.find((s) => t.startsWith(s, i));
    if (!tag) return i;
    i += tag.length;
  }
}

/**
 * How deep the parse of one output may recurse (lists in lists, a name before a name, a call as
 * an argument): past it the output is not a value this reader reads (and the stack stays small).
 */
const MAX_PARSE_DEPTH = 12;
let parseDepth = 0;

/** The text as a sequence of structured values, or null when any part of it is not one. */
function parseItems(text: string): Item[] | null {
  if (parseDepth >= MAX_PARSE_DEPTH) return null;
  parseDepth++;
  try {
    return parseSequence(text);
  } finally {
    parseDepth--;
  }
}

function parseSequence(text: string): Item[] | null {
  const items: Item[] = [];
  let i = skipSeparators(text, 0);
  while (i < text.length) {
    const r = parseItem(text, i);
    if (!r || items.length >= MAX_ITEMS) return null;
    items.push(r.item);
    i = skipSeparators(text, r.end);
  }
  return items.length > 0 ? items : null;
}

function parseItem(t: string, i: number): { item: Item; end: number } | null {
  const c = t[i];
  if (c === '{' || c === '[' || c === '"' || c === "'") return parseBracketed(t, i);
  if (c === '<') return parseElement(t, i);
  if (c !== undefined && /[A-Za-z_]/.test(c)) return parseNamed(t, i);
  return null;
}

/** A JSON / Python literal, a bracketed list of items (`[f(x), g(y)]`), or `[name]\n{…}`. */
function parseBracketed(t: string, i: number): { item: Item; end: number } | null {
  if (parseDepth >= MAX_PARSE_DEPTH) return null;
  parseDepth++;
  try {
    return bracketed(t, i);
  } finally {
    parseDepth--;
  }
}

function bracketed(t: string, i: number): { item: Item; end: number } | null {
  const scan = scanJsonValue(t, i, { singleQuotes: true });
  if (scan && scan.end > 0) {
    const raw = t.slice(i, scan.end);
    const v = decodeValue(raw);
    if (v.ok) return { item: { k: 'value', v: v.value }, end: scan.end };
    if (t[i] === '[') {
      const items = parseItems(raw.slice(1, -1));
      if (items) return { item: { k: 'list', items }, end: scan.end };
    }
  }
  if (t[i] !== '[') return null;
  // LM Studio's plain-text request: `[name]` on its own, then the arguments object
  const name = readName(t, i + 1);
  if (name === '' || t[i + 1 + name.length] !== ']') return null;
  return valueAfterName(t, name, i + name.length + 2);
}

function decodeValue(raw: string): { ok: true; value: unknown } | { ok: false } {
  const d = decodeJsonLenient(raw, { allowMissingClose: false });
  if (d) return { ok: true, value: d.value };
  return parsePythonLiteral(raw);
}

/** `name(…)`, or `name {…}` / `name: {…}` / `name\n[…]`: a name before one object or list. */
function parseNamed(t: string, i: number): { item: Item; end: number } | null {
  const name = readName(t, i);
  const j = i + name.length;
  if (t[j] === '(') {
    const close = matchParen(t, j);
    if (close < 0) return null;
    const args = readArgs(t.slice(j + 1, close));
    return args ? { item: { k: 'call', name, ...args }, end: close + 1 } : null;
  }
  return valueAfterName(t, name, j);
}

function valueAfterName(t: string, name: string, j: number): { item: Item; end: number } | null {
  let k = skipWs(t, j);
  if (t[k] === ':') k = skipWs(t, k + 1);
  if (t[k] !== '{' && t[k] !== '[') return null;
  const r = parseBracketed(t, k);
  if (r?.item.k !== 'value') return null;
  return { item: { k: 'call', name, pos: [{ lit: r.item.v }], kw: [], header: true }, end: r.end };
}

/** Index of the `)` closing the `(` at i (quote and bracket aware), or -1. */
function matchParen(t: string, i: number): number {
  const end = groupEnd(t, i);
  return end > 0 && t[end - 1] === ')' ? end - 1 : -1;
}

/** Splits `a, b=[1, 2], c="x, y"` at its top-level commas; null on unbalanced brackets or quotes. */
function splitTopLevel(s: string): string[] | null {
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '"' || c === "'" || c === '(' || c === '[' || c === '{') {
      const end = groupEnd(s, i);
      if (end < 0) return null;
      i = end - 1;
    } else if (c === ')' || c === ']' || c === '}') return null;
    else if (c === ',') {
      parts.push(s.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(s.slice(from));
  return parts.map((p) => p.trim()).filter((p, i, all) => p !== '' || i < all.length - 1);
}

/**
 * A bare word run (`Antwerp`, `New York`): small models drop the quotes of a string value. Not
 * an expression (`1+1`, `a*b`; a `/` stays allowed for paths): that is code, not a value.
 */
const BARE = /^[^\s'"()[\]{}<>,:=+*%|&^~][^'"()[\]{}<>,:=+*%|&^~]*$/;

/** One argument value: a literal, or a structured value (a call as an argument of another). */
function readArgValue(raw: string, allowBare: boolean): Arg | null {
  const lit = parsePythonLiteral(raw, true);
  if (lit.ok) return { lit: lit.value };
  const items = parseItems(raw);
  if (items && items.length === 1) return { item: items[0] as Item };
  return allowBare && BARE.test(raw) ? { lit: raw } : null;
}

/** `k="v", n=2`, `k: "v"` (Gemma's schema notation), `{k: v}` (a JS object), positional values. */
function readArgs(inner: string): { pos: Arg[]; kw: [string, Arg][] } | null {
  let s = inner.trim();
  if (s.startsWith('{') && s.endsWith('}')) {
    const v = decodeValue(s);
    if (v.ok) return { pos: [{ lit: v.value }], kw: [] };
    // a JavaScript object literal with bare keys: {city: "London"}
    s = s.slice(1, -1);
  }
  const parts = splitTopLevel(s);
  if (parts === null) return null;
  const pos: Arg[] = [];
  const kw: [string, Arg][] = [];
  for (const part of parts) {
    const key = readName(part, 0);
    const at = skipWs(part, key.length);
    if (key !== '' && (part[at] === '=' || part[at] === ':') && part[at + 1] !== '=') {
      const v = readArgValue(part.slice(at + 1).trim(), true);
      if (!v) return null;
      kw.push([key, v]);
      continue;
    }
    if (kw.length > 0) return null;
    const v = readArgValue(part, false);
    if (!v) return null;
    pos.push(v);
  }
  return { pos, kw };
}

/** One `key="value"` or `key='value'` attribute at i: [key, raw value, index after], or null. */
function readAttribute(t: string, i: number): [string, string, number] | null {
  const key = readName(t, i, ':');
  if (key === '' || t[i + key.length] !== '=') return null;
  const q = t[i + key.length + 1];
  if (q !== '"' && q !== "'") return null;
  const from = i + key.length + 2;
  const end = t.indexOf(q, from);
  const raw = end < 0 ? '' : t.slice(from, end);
  return end < 0 || raw.includes('<') ? null : [key, raw, end + 1];
}

/** `<tag a="v">inner</tag>` (same-named elements nested inside counted) or `<tag a="v" />`. */
function parseElement(t: string, i: number): { item: Item; end: number } | null {
  const tag = readName(t, i + 1, ':');
  if (tag === '') return null;
  const attrs: [string, string][] = [];
  let j = i + 1 + tag.length;
  for (;;) {
    const k = skipWs(t, j);
    if (t[k] === '>') {
      j = k + 1;
      break;
    }
    if (t.startsWith('/>', k)) return { item: { k: 'el', tag, attrs, inner: null }, end: k + 2 };
    if (k === j) return null;
    const a = readAttribute(t, k);
    if (!a) return null;
    attrs.push([a[0], a[1]]);
    j = a[2];
  }
  const open = `<${tag}`;
  const close = `</${tag}>`;
  let depth = 1;
  let k = j;
  // the next same-named open, searched again only once passed (no copy of the text per step)
  let o = -2;
  for (let guard = 0; guard < MAX_SAME_NESTED; guard++) {
    const c = t.indexOf(close, k);
    if (c < 0) return null;
    if (o !== -1 && o < k) {
      o = t.indexOf(open, k);
      while (o >= 0 && !/[\s>/]/.test(t[o + open.length] ?? '')) o = t.indexOf(open, o + 1);
    }
    if (o >= 0 && o < c) {
      depth++;
      k = o + open.length;
      continue;
    }
    if (--depth === 0) {
      return { item: { k: 'el', tag, attrs, inner: t.slice(j, c) }, end: c + close.length };
    }
    k = c + close.length;
  }
  return null;
}

// ---------------------------------------------------------------- read

type Reading = ImprovisedCall[];

const readingKey = (r: Reading) => JSON.stringify(r.map((c) => [c.name, c.args]));

function distinct(rs: Reading[]): Reading[] {
  if (rs.length < 2) return rs;
  const seen = new Map<string, Reading>();
  for (const r of rs) seen.set(readingKey(r), r);
  return [...seen.values()];
}

/** A string that may itself be a structured value (a call serialized inside a field). */
function looksStructured(s: string): boolean {
  const t = s.trimStart();
  return t.startsWith('{') || t.startsWith('[') || t.startsWith('<') || /^[A-Za-z_][\w.-]*\s*\(/.test(t);
}

/** Arguments given as an object, or as a JSON string of one. */
function argsOf(v: unknown): Record<string, unknown> | null {
  if (isPlainObject(v)) return v;
  if (typeof v === 'string' && v.trimStart().startsWith('{')) {
    const d = decodeJsonLenient(v);
    return d && isPlainObject(d.value) ? d.value : null;
  }
  return null;
}

/**
 * `{"args": {…}, "kwargs": {}}`: the one object an object holds beside nothing but empty ones (`{}`,
 * `[]`), as Qwen2.5 nests its arguments in a `function_call` beside a stray `"kwargs{": {}`
 * (gpustack/llama-box#16). The empty values carry no argument, so leaving them out loses nothing;
 * tried only when the holder itself does not fit, and the object read must fit the tool's
 * schema. Null for anything else: a second non-empty value, a string, a number.
 */
function heldArgs(a: Record<string, unknown>): Record<string, unknown> | null {
  let held: Record<string, unknown> | null = null;
  for (const k of Object.keys(a)) {
    const v = a[k];
    if (isPlainObject(v) && Object.keys(v).length > 0) {
      if (held) return null;
      held = v;
    } else if (!(isPlainObject(v) || (Array.isArray(v) && v.length === 0))) return null;
  }
  return held;
}

function propertyNames(tool: DeclaredTool): string[] {
  const props = tool.parameters?.['properties'];
  return isPlainObject(props) ? Object.keys(props) : [];
}

/** Strips one newline the model put after the opening tag and one before the closing tag. */
function elementText(raw: string): string {
  let s = raw;
  if (s.startsWith('\r\n')) s = s.slice(2);
  else if (s.startsWith('\n')) s = s.slice(1);
  if (s.endsWith('\r\n')) s = s.slice(0, -2);
  else if (s.endsWith('\n')) s = s.slice(0, -1);
  return s;
}

function typedText(raw: string, tool: DeclaredTool, key: string): unknown {
  const schema = paramSchema(tool, key);
  const v = coerceParamValue(elementText(raw), schema);
  // a value that only surrounding blanks keep from being its declared type
  return typeof v === 'string' && schema?.['type'] !== 'string' && v.trim() !== v
    ? coerceParamValue(v.trim(), schema)
    : v;
}

/** Namespaces resolveToolName strips (`default_api.` the longest): a longer string names no tool. */
const PREFIX_ROOM = 'default_api.'.length;

class Reader {
  private checks: number;
  private readonly longestName: number;

  constructor(
    private readonly tools: Tools,
    length: number,
  ) {
    this.checks = checksFor(length);
    let longest = 0;
    for (const n of tools.keys()) if (n.length > longest) longest = n.length;
    this.longestName = longest;
  }

  /**
   * The declared tool an undeclared name means when it is that tool's name in another case
   * (`Read_File`, `READ_FILE`, `Read` for `read`) or under `functions.` / `default_api.`
   * (engine/tool-names.ts: exactly one declared name folds to it, else none). Taken only where
   * the shape itself says "call": an object of a name and its arguments object and nothing else,
   * a call with keyword arguments, an element's tag; never flat arguments beside a name, a name
   * as a key, an attribute value or a name before an object. The call keeps the written name:
   * the engine renames it (repair name-case / name-prefix) after checking the arguments again.
   */
  private renamed(name: string): string | null {
    if (name.length > this.longestName + PREFIX_ROOM || this.tools.has(name)) return null;
    return resolveToolName(name, this.tools)?.name ?? null;
  }

  /** Every value a call: the calls in order when each has exactly one reading. */
  sequence(items: Item[], depth: number): Reading[] {
    const acc: ImprovisedCall[] = [];
    for (const it of items) {
      const rs = this.item(it, depth);
      if (rs.length !== 1) return [];
      pushAll(acc, rs[0] as Reading);
    }
    return acc.length > 0 ? [acc] : [];
  }

  item(it: Item, depth: number): Reading[] {
    switch (it.k) {
      case 'value':
        return this.value(it.v, depth);
      case 'list':
        return this.sequence(it.items, depth);
      case 'call':
        return this.call(it, depth);
      case 'el':
        return this.element(it, depth);
    }
  }

  private value(v: unknown, depth: number): Reading[] {
    if (Array.isArray(v)) {
      if (v.length === 0 || v.length > MAX_ITEMS) return [];
      const acc: ImprovisedCall[] = [];
      for (const x of v) {
        const rs = this.value(x, depth);
        if (rs.length !== 1) return [];
        pushAll(acc, rs[0] as Reading);
      }
      return [acc];
    }
    if (isPlainObject(v)) return this.object(v, depth);
    if (typeof v === 'string' && depth < MAX_DEPTH && looksStructured(v)) {
      const items = parseItems(v.trim());
      return items ? this.sequence(items, depth + 1) : [];
    }
    return [];
  }

  /** `written`: the name as the output spells it, when it is another spelling of `name` (renamed). */
  private accept(out: Reading[], name: string, args: Record<string, unknown> | null, written = name): void {
    if (!args || --this.checks < 0) return;
    const call = gated({ name, args }, this.tools);
    if (call) out.push([written === name ? call : { name: written, args: call.args }]);
  }

  private object(o: Record<string, unknown>, depth: number): Reading[] {
    const out: Reading[] = [];
    const keys = Object.keys(o);
    const named = keys.filter((k) => {
      const v = o[k];
      return (typeof v === 'string' && this.tools.has(v)) || this.tools.has(k);
    });
    // a name in another spelling: only as {NAME_KEY: name, ARGS_KEY: {…}} (a call id or
    // `"type": "function"` beside them aside), the arguments an object or a JSON string of one
    if (named.length === 0 && keys.length >= 2 && keys.length <= 4) {
      const rest = keys.filter(
        (k) => !(k === 'type' && o[k] === 'function') && !(k === 'id' && typeof o[k] === 'string'),
      );
      if (rest.length === 2) {
        for (const [k, k2] of [rest, [...rest].reverse()] as [string, string][]) {
          const v = o[k];
          const to = typeof v === 'string' ? this.renamed(v) : null;
          const a = to === null ? null : argsOf(o[k2]);
          if (to !== null && a) this.accept(out, to, a, v as string);
        }
      }
    }
    // more names than any real call object carries: ambiguous by construction
    if (named.length > MAX_NAMES_PER_OBJECT) return [];
    if (named.length > 0) {
      // the objects (or JSON strings of one) that could be the arguments, decoded once
      const argsUnder: [string, Record<string, unknown>][] = [];
      for (const k of keys) {
        const a = argsOf(o[k]);
        if (a) argsUnder.push([k, a]);
      }
      for (const k of named) {
        const v = o[k];
        if (typeof v === 'string' && this.tools.has(v)) {
          const tool = this.tools.get(v) as DeclaredTool;
          // the arguments under any key beside the name, or (when that object does not fit)
          // held one level lower in it
          for (const [k2, a] of argsUnder) {
            if (k2 === k) continue;
            const before = out.length;
            this.accept(out, v, a);
            const held = out.length === before ? heldArgs(a) : null;
            if (held) this.accept(out, v, held);
          }
          // or flat beside it, less what the wire shape carries there (`"type": "function"`, a call id)
          const params = new StringSet(propertyNames(tool));
          const flat = createArgs();
          for (const k2 of keys) {
            if (k2 === k) continue;
            const meta =
              (k2 === 'type' && o[k2] === 'function') || (k2 === 'id' && typeof o[k2] === 'string');
            if (!meta || params.has(k2)) flat[k2] = o[k2];
          }
          this.accept(out, v, flat);
        }
        if (this.tools.has(k)) this.accept(out, k, v === null ? createArgs() : argsOf(v));
      }
    }
    // a message of another role holding calls (a user turn quoted back) is not the model calling
    const role = o['role'];
    if (out.length > 0 || depth >= MAX_DEPTH || (typeof role === 'string' && role !== 'assistant'))
      return distinct(out);
    // no call itself: a wrapper, read one level down
    for (const k of keys) {
      const v = o[k];
      if (isPlainObject(v) || Array.isArray(v) || (typeof v === 'string' && looksStructured(v)))
        pushAll(out, this.value(v, depth + 1));
    }
    return distinct(out);
  }

  private toolNamed(name: string): string | null {
    if (this.tools.has(name)) return name;
    // `get_weather.call(city=…)`: Llama 3.1's built-in tool syntax (`brave_search.call(query=…)`,
    // which llama.cpp's Llama 3.1 reader takes after <|python_tag|>) written for a custom tool
    if (name.endsWith('.call') && this.tools.has(name.slice(0, -5))) return name.slice(0, -5);
    // `default_api.get_weather`, `functions.get_weather`: the declared tool after the last dot
    const dot = name.lastIndexOf('.');
    return dot > 0 && this.tools.has(name.slice(dot + 1)) ? name.slice(dot + 1) : null;
  }

  private call(c: Extract<Item, { k: 'call' }>, depth: number): Reading[] {
    // another spelling of a declared name: only a call with keyword arguments (`READ_FILE(path=…)`),
    // never positional ones mapped by order, nor a name before an object
    const renamed =
      this.toolNamed(c.name) === null && !c.header && c.pos.length === 0 && c.kw.length > 0
        ? this.renamed(c.name)
        : null;
    const name = renamed ?? this.toolNamed(c.name);
    if (name === null) {
      // `print(default_api.get_weather(…))`: a call that is the only argument of another (an
      // unknown name before an object is not a wrapper: that is another format's marker)
      const only = c.pos[0];
      if (c.header || depth >= MAX_DEPTH || c.pos.length !== 1 || c.kw.length !== 0 || !only) return [];
      return 'item' in only ? this.item(only.item, depth + 1) : this.value(only.lit, depth + 1);
    }
    const tool = this.tools.get(name) as DeclaredTool;
    const kw = createArgs();
    for (const [k, a] of c.kw) {
      const v = argValue(a);
      if (v === NOT_A_VALUE || Object.hasOwn(kw, k)) return [];
      kw[k] = v;
    }
    const pos = c.pos.map(argValue);
    if (pos.includes(NOT_A_VALUE)) return [];
    const out: Reading[] = [];
    if (pos.length === 0) this.accept(out, name, kw, renamed === null ? name : c.name);
    else {
      if (pos.length === 1 && c.kw.length === 0 && isPlainObject(pos[0])) this.accept(out, name, pos[0]);
      const params = propertyNames(tool);
      const req = tool.parameters?.['required'];
      // a Set, not req.includes per name: n properties all required cost n², not n (1.2 s at 16k)
      const wanted = Array.isArray(req) ? new StringSet(req.filter((r) => typeof r === 'string')) : undefined;
      const required = wanted ? params.filter((p) => wanted.has(p)) : [];
      const targets =
        params.length === 1 && pos.length === 1 ? params : pos.length === required.length ? required : null;
      if (targets) {
        const args = { ...kw };
        let ok = true;
        targets.forEach((p, i) => {
          if (Object.hasOwn(args, p)) ok = false;
          args[p] = pos[i];
        });
        if (ok) this.accept(out, name, args);
      }
    }
    return distinct(out);
  }

  private element(e: Extract<Item, { k: 'el' }>, depth: number): Reading[] {
    const out: Reading[] = [];
    // Each reading builds its arguments from all the other attributes: an element naming tools
    // in many attributes cost attributes x attributes (64 KB of them: 6.7 s). More names than
    // any real call carries is ambiguous by construction, as for an object's keys; and the
    // check budget is consulted before the arguments are built, not after.
    let named = 0;
    for (const [, v] of e.attrs)
      if (v !== e.tag && this.tools.has(v) && ++named > MAX_NAMES_PER_OBJECT) return [];
    if (this.tools.has(e.tag) && this.checks > 0)
      this.accept(out, e.tag, this.elementArgs(e.tag, e.attrs, e.inner));
    else if (named === 0 && this.checks > 0) {
      // the tag in another spelling of a declared name (`<Read_File><path>…</path></Read_File>`)
      const to = this.renamed(e.tag);
      if (to !== null) this.accept(out, to, this.elementArgs(to, e.attrs, e.inner), e.tag);
    }
    if (named > 0) {
      e.attrs.forEach(([, v], i) => {
        if (v !== e.tag && this.tools.has(v) && this.checks > 0)
          this.accept(
            out,
            v,
            this.elementArgs(
              v,
              e.attrs.filter((_, j) => j !== i),
              e.inner,
            ),
          );
      });
    }
    if (out.length > 0 || depth >= MAX_DEPTH || e.inner === null) return distinct(out);
    // no call itself: a wrapper around the calls
    const items = parseItems(e.inner.trim());
    const inside = items ? this.sequence(items, depth + 1) : [];
    if (inside.length > 0) return inside;
    // or a record written in tags, read as the object it spells:
    // <function_call><invoke_name>read</invoke_name><parameters><path>…</path></parameters></function_call>
    const o = elementObject(e.inner, 0);
    return o ? this.object(o, depth) : [];
  }

  /** Attributes and children of an element naming `name` as its arguments, typed by the schema. */
  private elementArgs(
    name: string,
    attrs: [string, string][],
    inner: string | null,
  ): Record<string, unknown> | null {
    const tool = this.tools.get(name) as DeclaredTool;
    const args = createArgs();
    for (const [k, v] of attrs) {
      if (Object.hasOwn(args, k)) return null;
      args[k] = typedText(v, tool, k);
    }
    const t = inner?.trim() ?? '';
    if (t === '') return args;
    if (t.startsWith('{')) {
      // beside a JSON body, an `id` attribute the schema does not declare is the call's id, not
      // an argument: `<tool_call id="call_00_x" name="NAME">{…}</tool_call>` (felinics/Memoh#435)
      const idOnly =
        attrs.length === 1 &&
        CALL_ID_ATTRS.has(attrs[0]?.[0] ?? '') &&
        !propertyNames(tool).includes(attrs[0]?.[0] ?? '');
      const v = attrs.length === 0 || idOnly ? decodeValue(t) : null;
      return v?.ok && isPlainObject(v.value) ? v.value : null;
    }
    if (!t.startsWith('<')) {
      const params = propertyNames(tool);
      if (attrs.length > 0 || params.length !== 1) return null;
      args[params[0] as string] = typedText(inner as string, tool, params[0] as string);
      return args;
    }
    const children = childElements(t);
    if (children === null) return null;
    for (const { key, inner: text } of children) {
      if (Object.hasOwn(args, key)) return null;
      const items = listItems(text, tool, key);
      if (items === null) return null;
      args[key] = items ?? typedText(text, tool, key);
    }
    return args;
  }
}

/**
 * The items of an array parameter written as child elements, one element per item:
 * `<suggestions><suggestion>a</suggestion><suggestion>b</suggestion></suggestions>` is
 * `["a", "b"]` (RooCodeInc/Roo-Code#10270), each item typed by the schema's `items`, an object
 * item read from its own child elements. Undefined when the parameter is no array or its text
 * holds no markup (typedText reads it); null when the text holds markup that is not one run of
 * elements of one tag, or an item does not read: which value the model meant is then unsure, so
 * the call is not read.
 */
function listItems(text: string, tool: DeclaredTool, key: string): unknown[] | null | undefined {
  const schema = paramSchema(tool, key);
  const t = text.trim();
  if (schema?.['type'] !== 'array' || t.startsWith('[')) return undefined;
  // markup that is not one run of elements: lifting the text into a list would make one item of it
  if (!t.startsWith('<')) return /<\/?[A-Za-z]/.test(t) ? null : undefined;
  const kids = childElements(t);
  if (kids === null || kids.length === 0 || kids.some((k) => k.key !== kids[0]?.key)) return null;
  const item = isPlainObject(schema['items']) ? schema['items'] : undefined;
  const out: unknown[] = [];
  for (const { inner } of kids) {
    if (item?.['type'] === 'object') {
      const o = elementObject(inner, 1);
      if (o === null) return null;
      out.push(o);
      continue;
    }
    const v = coerceParamValue(elementText(inner), item);
    out.push(
      typeof v === 'string' && item?.['type'] !== 'string' && item !== undefined && v.trim() !== v
        ? coerceParamValue(v.trim(), item)
        : v,
    );
  }
  return out;
}

/** Attributes that carry a call's id rather than an argument (dropped beside a JSON body). */
const CALL_ID_ATTRS = new Set(['id', 'call_id', 'tool_call_id']);

/**
 * The elements `t` is made of (blanks between), each keyed by its `name` or `key` attribute,
 * else its tag; null when `t` holds anything but elements.
 */
function childElements(t: string): { key: string; inner: string }[] | null {
  const out: { key: string; inner: string }[] = [];
  let i = 0;
  while (i < t.length) {
    const r = parseElement(t, i);
    if (r?.item.k !== 'el') return null;
    const named = r.item.attrs.find(([k]) => k === 'name' || k === 'key');
    out.push({ key: named ? named[1] : r.item.tag, inner: r.item.inner ?? '' });
    i = skipWs(t, r.end);
  }
  return out;
}

/**
 * Child elements as an object: each child's tag (or `name` attribute) a key, its value the
 * object its own children spell or its text. null when the text is not only elements, a key
 * repeats, or the nesting runs past MAX_DEPTH.
 */
function elementObject(inner: string, depth: number): Record<string, unknown> | null {
  const t = inner.trim();
  if (!t.startsWith('<') || depth >= MAX_DEPTH) return null;
  const children = childElements(t);
  if (children === null) return null;
  const o = createArgs();
  for (const { key, inner: text } of children) {
    if (Object.hasOwn(o, key)) return null;
    o[key] = text.trim().startsWith('<')
      ? (elementObject(text, depth + 1) ?? text)
      : elementText(text).trim();
  }
  return o;
}

const NOT_A_VALUE = Symbol('not a value');

function argValue(a: Arg): unknown {
  if ('lit' in a) return a.lit;
  return a.item.k === 'value' ? a.item.v : NOT_A_VALUE;
}

/**
 * The calls an output written as structured values makes, when exactly one reading of each
 * value names a declared tool with arguments that fit its schema; null otherwise.
 */
export function readImprovisedCalls(text: string, tools: Tools): ImprovisedCall[] | null {
  if (tools.size === 0) return null;
  // every reading names a declared tool literally (a key, a value, a tag, an attribute, a
  // function name): an output in which none occurs is no call, whatever its shape (1 MB of HTML)
  // (or in another case: READ_FILE(…), which the reader may take for read_file)
  if (tools.size <= MAX_NAMES_SCANNED && ![...tools.keys()].some((n) => n !== '' && text.includes(n))) {
    const lower = text.toLowerCase();
    if (![...tools.keys()].some((n) => n !== '' && lower.includes(n.toLowerCase()))) return null;
  }
  const items = parseItems(text);
  if (!items) return null;
  const readings = new Reader(tools, text.length).sequence(items, 0);
  return readings.length === 1 ? (readings[0] as Reading) : null;
}
