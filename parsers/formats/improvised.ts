/**
 * Improvised shapes: small models that no grammar steers (prompted tools, `auto` mode, a
 * backend without a parser) write a call in a shape no format defines (captures with their
 * sources: tests/fixtures/parsers/wild.json):
 * - a JSON object naming the tool under another key than `name` and the arguments under
 *   another key than `arguments`: {"tool": "get_weather", "tool_input": {...}}; or with the
 *   arguments flat beside the name: {"name": "get_weather", "city": "Paris"};
 * - an object whose only key is the tool's name: {"get_weather": {"city": "Paris"}};
 * - the OpenAI wire shape copied into content: {"tool_calls": [...]}, {"function_call": {...}};
 * - several call objects back to back, stray `<tool_call>` / `</tool_call>` tags between;
 * - a Python-style call or dict after the name: get_weather(city="Paris"),
 *   get_weather(city: "Paris"), get_weather('Paris') for a one-parameter tool,
 *   get_weather({"city": "Paris"}), get_weather {"city": "Paris"};
 * - a call inside an ad-hoc tag or wrapper: <get_weather>{"city": "Paris"}</get_weather>,
 *   <get_weather><city>Paris</city></get_weather>, <get_weather city="Paris" />, [get_weather]\n{...}\n[END_TOOL_REQUEST]
 *   (LM Studio), [TOOL_CALL] ... [/TOOL_CALL], <functioncall> ... or <functioncall {...}>
 *   (Glaive), <|python_tag|>, generic wrappers alone or nested (<response>, <tools>,
 *   <function_call>, <json>, after an <?xml?> prolog, in a ```xml fence),
 *   Claude's <function_calls><invoke name="…"><parameter name="…">…, Gemini's
 *   print(default_api.name(…)) (in a ```tool_code fence or not);
 *   an end-of-turn token the backend left after it (<|im_end|>, <|eot_id|>, ...) is dropped.
 * Strict gates keep precision: the call is the WHOLE output (after reasoning and one code
 * fence), the name is exactly a declared tool, and the arguments fit that tool's schema
 * (fitsSchema; a lone value where a list of that item type is declared becomes the list);
 * several calls are all or nothing. A whole-output check like `json`: no
 * per-character cost; outputs starting with `{`, a fence, a declared name, `<name>` or
 * `[name]` are held to the end (up to maxHeldBytes).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch } from '../engine/family.js';
import type { DeclaredTool, ParseContext, ParsedCall } from '../types.js';
import {
  callFromLooseObject,
  callFromNamed,
  decodeObject,
  gated,
  type ImprovisedCall,
} from '../kit/improvised-call.js';
import { readName, scanJsonValue, skipWs, trimEndIndex } from '../kit/json-scan.js';
import { createArgs, isPlainObject } from '../kit/lenient-json.js';
import { readXmlCalls } from '../kit/long-tail.js';
import { coerceParamValue, paramSchema } from '../kit/schema-values.js';
import { MINIMAX_INVOKE } from './minimax-m2.js';
import { pushAll } from '../../protocol/append-all.js';

/** What may follow a declared name at the start of an output for it to be held as a possible call. */
const NAME_FOLLOWERS = ['(', ' (', '{', ' {', '\n{', ':', ' :'];

type Found = ImprovisedCall | null;

/** One `key="value"` or `key='value'` attribute at i: [key, raw value, index after], or null. */
function readAttribute(t: string, i: number): [string, string, number] | null {
  const key = readName(t, i);
  if (key === '' || t[i + key.length] !== '=') return null;
  const q = t[i + key.length + 1];
  if (q !== '"' && q !== "'") return null;
  const from = i + key.length + 2;
  const end = t.indexOf(q, from);
  const raw = end < 0 ? '' : t.slice(from, end);
  return end < 0 || raw.includes('<') ? null : [key, raw, end + 1];
}

/**
 * <name key="value" … />: the arguments as the attributes of a self-closing element named after
 * a declared tool (qwen2.5-coder 7B, wild4.json); values typed by the schema, each key once.
 */
function fromSelfClosing(t: string, name: string, tools: ReadonlyMap<string, DeclaredTool>): Found {
  if (!t.endsWith('/>') || !/\s/.test(t[name.length + 1] ?? '')) return null;
  const tool = tools.get(name);
  const args = createArgs();
  const stop = t.length - 2;
  let i = skipWs(t, name.length + 1);
  while (i < stop) {
    const a = readAttribute(t, i);
    if (!a || Object.hasOwn(args, a[0])) return null;
    args[a[0]] = coerceParamValue(a[1], paramSchema(tool, a[0]));
    const next = skipWs(t, a[2]);
    if (next === a[2] && next < stop) return null;
    i = next;
  }
  return { name, args };
}

/** <name>{...}</name>, <name><key>value</key>...</name> or <name key="value" />; `name` is a declared tool. */
function fromTag(t: string, tools: ReadonlyMap<string, DeclaredTool>): Found {
  if (!t.startsWith('<')) return null;
  const name = readName(t, 1);
  if (name !== '' && tools.has(name) && t[name.length + 1] !== '>') return fromSelfClosing(t, name, tools);
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

/** Fence languages small models put on a call: ```json, ```tool_call (Gemma), ```tool_code, ```xml (Qwen2). */
const FENCE_LANGS = new Set(['', 'json', 'javascript', 'python', 'tool_call', 'tool_code', 'xml']);

/** The body of ONE code fence filling the text; null when the text is not exactly one fence. */
function fenceBody(t: string): string | null {
  const nl = t.indexOf('\n');
  if (nl < 0 || !t.endsWith('```') || t.length < nl + 4) return null;
  if (!FENCE_LANGS.has(t.slice(3, nl).trim().toLowerCase())) return null;
  const body = t.slice(nl + 1, -3);
  return body.includes('```') ? null : body;
}

/** Tags a small model leaves around or between its calls (Jan writes `{…}</tool_call>` without the opener). */
const STRAY_TAGS = ['<tool_call>', '</tool_call>'];

function skipStray(t: string, i: number): number {
  for (;;) {
    i = skipWs(t, i);
    const tag = STRAY_TAGS.find((s) => t.startsWith(s, i));
    if (!tag) return i;
    i += tag.length;
  }
}

/**
 * An object that wraps calls the way the OpenAI API does, copied into content by a model
 * imitating it: {"tool_calls": [{"type": "function", "function": {…}}]} (with `role` and an
 * empty `content` beside it, or not) or the legacy {"function_call": {…}}. The items, or null.
 */
function apiShapedItems(o: Record<string, unknown>): Record<string, unknown>[] | null {
  const keys = Object.keys(o);
  if (o['role'] !== undefined && o['role'] !== 'assistant') return null;
  if (o['content'] !== undefined && o['content'] !== null && o['content'] !== '') return null;
  const inner = keys.filter((k) => k !== 'role' && k !== 'content');
  if (inner.length !== 1) return null;
  const v = o[inner[0] as string];
  if (inner[0] === 'function_call') return isPlainObject(v) ? [v] : null;
  if (inner[0] !== 'tool_calls' || !Array.isArray(v) || v.length === 0) return null;
  return v.every(isPlainObject) ? v : null;
}

function objectToCalls(
  o: Record<string, unknown>,
  tools: ReadonlyMap<string, DeclaredTool>,
): ImprovisedCall[] | null {
  const items = apiShapedItems(o) ?? [o];
  const calls: ImprovisedCall[] = [];
  for (const it of items) {
    const call = gated(callFromLooseObject(it, tools), tools);
    if (!call) return null;
    calls.push(call);
  }
  return calls;
}

/**
 * One or more call objects back to back (`{…} {…}`, `{…}\n</tool_call>\n<tool_call>\n{…}`):
 * every object a gated call, nothing else between them than whitespace and stray tool-call tags.
 */
function objectCalls(t: string, tools: ReadonlyMap<string, DeclaredTool>): ImprovisedCall[] | null {
  const calls: ImprovisedCall[] = [];
  let i = skipStray(t, 0);
  while (i < t.length) {
    if (t[i] !== '{') return null;
    const scan = scanJsonValue(t, i);
    if (!scan || scan.end < 0) return null;
    const o = decodeObject(t.slice(i, scan.end));
    const found = o ? objectToCalls(o, tools) : null;
    if (!found) return null;
    pushAll(calls, found);
    i = skipStray(t, scan.end);
  }
  return calls.length > 0 ? calls : null;
}

/** LM Studio's plain-text request: `[name]\n{…}\n[END_TOOL_REQUEST]`. */
function fromBracketed(t: string, tools: ReadonlyMap<string, DeclaredTool>): Found {
  const END = '[END_TOOL_REQUEST]';
  const name = readName(t, 1);
  if (name === '' || t[name.length + 1] !== ']' || !t.endsWith(END)) return null;
  const o = decodeObject(t.slice(name.length + 2, -END.length));
  return o && tools.has(name) ? { name, args: o } : null;
}

/**
 * Ad-hoc wrappers around improvised calls: MiniMax's `[TOOL_CALL] … [/TOOL_CALL]`, the
 * Glaive fine-tunes' `<functioncall> …` (no closer) or `<functioncall {…}>`, Llama 3.3's
 * `<|python_tag|>name(…)`.
 */
const WRAPPERS: readonly [string, string][] = [
  ['[TOOL_CALL]', '[/TOOL_CALL]'],
  ['<functioncall>', ''],
  // the object written inside the tag itself (maxi1134/Home-Assistant-Config#66)
  ['<functioncall ', '>'],
  ['<|python_tag|>', ''],
];
/**
 * End-of-turn tokens a backend left in the text after the call (its template and the model
 * disagree on the stop token): ChatML, Llama 3, GPT-2 style, Phi, Mistral.
 */
const EOS_TOKENS = ['<|im_end|>', '<|eot_id|>', '<|eom_id|>', '<|endoftext|>', '<|end|>', '</s>'];

function unwrap(text: string): string {
  // by index, one slice at the end (a run of repeated tokens is hostile output's favourite)
  let end = text.length;
  for (;;) {
    const eos = EOS_TOKENS.find((e) => end >= e.length && text.startsWith(e, end - e.length));
    if (eos === undefined) break;
    end = trimEndIndex(text, end - eos.length);
  }
  const t = end === text.length ? text : text.slice(0, end);
  for (const [open, close] of WRAPPERS) {
    if (t.startsWith(open) && t.endsWith(close)) return t.slice(open.length, t.length - close.length).trim();
  }
  return peelTags(t);
}

/**
 * Generic XML-ish tags Qwen2-era models invent around a call, alone or nested, with an XML
 * prolog or not (mlx-omni-server#4, personal_agent's report): `<response>\n<tools>{…}</tools>\n
 * </response>`, `<function_call>{…}</function_call>` in a ```xml fence, `<?xml …?><json>{…}</json>`.
 * Only these names are peeled (a declared tool's own tag is `fromTag`'s), and what is left must
 * still be a gated call filling the rest.
 */
const WRAPPER_TAGS = ['response', 'tools', 'tool', 'tool_calls', 'tool_call', 'function_call', 'json'];

function peelTags(text: string): string {
  // by index, one slice at the end: hostile output nests thousands of these
  let from = 0;
  let to = text.length;
  if (text.startsWith('<?xml')) {
    const e = text.indexOf('?>');
    if (e < 0) return text;
    from = skipWs(text, e + 2);
  }
  for (;;) {
    const name =
      text[from] === '<'
        ? WRAPPER_TAGS.find(
            (n) => text.startsWith(`<${n}>`, from) && text.startsWith(`</${n}>`, to - n.length - 3),
          )
        : undefined;
    if (name === undefined || to - from < 2 * name.length + 5) break;
    from = skipWs(text, from + name.length + 2);
    to = trimEndIndex(text, to - name.length - 3, from);
  }
  return from === 0 && to === text.length ? text : text.slice(from, to);
}

const ANTHROPIC_OPEN = '<function_calls>';
const ANTHROPIC_CLOSE = '</function_calls>';

/**
 * Claude's prompted-tools block, which models distilled from Claude write (Qwen3-Coder, see
 * NousResearch/hermes-agent#83023): `<function_calls><invoke name="…"><parameter name="…">`,
 * the same XML MiniMax-M2 puts in its own tag. Every call gated, all or nothing.
 */
function anthropicCalls(t: string, tools: ReadonlyMap<string, DeclaredTool>): ImprovisedCall[] | null {
  const body = t.startsWith(ANTHROPIC_OPEN)
    ? t.endsWith(ANTHROPIC_CLOSE)
      ? t.slice(ANTHROPIC_OPEN.length, -ANTHROPIC_CLOSE.length)
      : null
    : t;
  const r = body === null ? null : readXmlCalls(body, MINIMAX_INVOKE, { tools });
  if (!r || 'error' in r) return null;
  const calls: ImprovisedCall[] = [];
  for (const c of r.calls) {
    const call = isPlainObject(c.arguments) ? gated({ name: c.name, args: c.arguments }, tools) : null;
    if (!call) return null;
    calls.push(call);
  }
  return calls;
}

/**
 * Gemini's `tool_code` habit, which Gemma shares: `print(default_api.get_weather(city="Paris"))`
 * (see google/adk-go#492, camel-ai/camel#2064); the bare call inside is what is read.
 */
function stripToolCode(t: string): string {
  let s = t;
  if (s.startsWith('print(') && s.endsWith(')')) s = s.slice('print('.length, -1).trim();
  return s.startsWith('default_api.') ? s.slice('default_api.'.length) : s;
}

function readCalls(t: string, tools: ReadonlyMap<string, DeclaredTool>): ImprovisedCall[] | null {
  if (t.startsWith('{')) return objectCalls(t, tools);
  if (t.startsWith(ANTHROPIC_OPEN) || t.startsWith(MINIMAX_INVOKE.callOpen)) return anthropicCalls(t, tools);
  let found: Found;
  if (t.startsWith('<')) found = fromTag(t, tools);
  else if (t.startsWith('[')) found = fromBracketed(t, tools);
  else found = callFromNamed(stripToolCode(t), tools);
  const call = gated(found, tools);
  return call ? [call] : null;
}

function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  if (ctx.tools.size === 0) return null;
  const trimmed = text.trim();
  const bare = unwrap(trimmed);
  const fenced = bare.startsWith('```') ? fenceBody(bare) : null;
  if (bare.startsWith('```') && fenced === null) return null;
  const calls = readCalls(fenced !== null ? unwrap(fenced.trim()) : bare, ctx.tools);
  if (!calls) return null;
  const repairs = fenced !== null ? ['code-fence'] : [];
  return {
    end: text.length,
    calls: calls.map((c): ParsedCall => ({ name: c.name, arguments: c.args, repairs })),
  };
}

export const improvised = defineFamily({
  name: 'improvised',
  markers: [],
  // after the strict formats (json is 90): a standard shape is always read by its own family
  priority: 95,
  backend: {},
  wholeStarts: [
    '{',
    '```',
    '[TOOL_CALL]',
    '<functioncall>',
    '<functioncall ',
    ANTHROPIC_OPEN,
    MINIMAX_INVOKE.callOpen,
    'print(default_api.',
    'default_api.',
    '<response>',
    '<json>',
    '<?xml',
  ],
  // a declared name right before `(`, `{` or `:` (prose that merely starts with the name is
  // not held), `<name>`, `<name ` (attributes), `[name]`, or `<|python_tag|>name`
  wholeStartsFor: (ctx) =>
    [...ctx.tools.keys()].flatMap((n) =>
      n === ''
        ? []
        : [...NAME_FOLLOWERS.map((f) => n + f), `<${n}>`, `<${n} `, `[${n}]`, `<|python_tag|>${n}`],
    ),
  matchWhole,
});
