/**
 * Bracket-arrow calls (issue 30, class 3: an improvised syntax nobody enumerated), a Perl-hash
 * dialect MiniMax models are seen writing when their own tags are not in the prompt:
 *
 *   [TOOL_CALL]
 *   {tool => "skills_list", args => {
 *     --category "research"
 *   }}
 *   [/TOOL_CALL]
 *
 * The arguments are command-line flags (`--key "value"`, also `--key: value`), key arrows
 * (`key => "value"`), or one JSON object. Each value is one JSON value (a string in double
 * quotes, a number, true / false / null, an array or an object); entries are separated by
 * blanks, newlines or commas. Read only when the whole block is exactly that: the tool is
 * declared, every key is declared and the arguments fit its schema (fitsSchema); anything else
 * stays text with an `unrecovered` record (its body is no structured value, so the improvised
 * reader, which strips the same wrapper, could not read it either). A block the
 * end of output cut off after its closing braces is read (repair `unclosed-envelope`).
 * The tool's name may be single-quoted, as Perl quotes a word (`{tool => 'exec', …}`, MiniMax-M2.7
 * in openclaw/openclaw#70331); values keep JSON's double quotes.
 * Source: NousResearch/hermes-agent#11994 (the block as the issue pastes it); the same dialect
 * appears in agent code handling "[TOOL_CALL] {tool => …, args => { --k "v" }}" blocks next to
 * MiniMax's `<minimax:tool_call>` XML. The family also reads a second bracketed notation,
 * `[Tool Call] name=NAME id=ID args={json}` (logLine below).
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { closedEnvelope, peekNonWs } from '../kit/envelope.js';
import { expectLiteral, scanJsonValue, skipWs, strictObject } from '../kit/json-scan.js';
import { coerceParamValue, createArgs, fitsSchema, paramSchema } from '../kit/schema-values.js';

const OPEN = '[TOOL_CALL]';
const END = '[/TOOL_CALL]';
const ARROW = '=>';

/** One JSON value at i: the value and the index after it, or null. */
function jsonValue(s: string, i: number): { value: unknown; end: number } | null {
  let end: number;
  if (s[i] === '{' || s[i] === '[' || s[i] === '"') {
    const scan = scanJsonValue(s, i);
    if (!scan || scan.end < 0) return null;
    end = scan.end;
  } else {
    end = i;
    while (end < s.length && /[\w.+-]/.test(s[end] ?? '')) end++;
    if (end === i) return null;
  }
  try {
    return { value: JSON.parse(s.slice(i, end)), end };
  } catch {
    return null;
  }
}

/** `key => ` or `--key ` / `--key: ` / `--key=` at i: the key and where its value starts. */
function entryKey(s: string, i: number): { key: string; at: number } | null {
  const flag = s.startsWith('--', i);
  let e = flag ? i + 2 : i;
  const from = e;
  while (e < s.length && /[\w.-]/.test(s[e] ?? '')) e++;
  if (e === from) return null;
  const key = s.slice(from, e);
  let j = skipWs(s, e);
  if (flag) {
    if (s[j] === ':' || s[j] === '=') j = skipWs(s, j + 1);
    else if (j === e) return null;
  } else {
    if (!s.startsWith(ARROW, j)) return null;
    j = skipWs(s, j + ARROW.length);
  }
  return { key, at: j };
}

/** The inside of an arguments block that is no JSON object: flag / arrow entries. */
function readArgs(inner: string, name: string, ctx: ParseContext): Record<string, unknown> | null {
  const t = inner.trim();
  const tool = ctx.tools.get(name);
  const args = createArgs();
  let i = 0;
  while (i < t.length) {
    const k = entryKey(t, i);
    if (!k || Object.hasOwn(args, k.key)) return null;
    const v = jsonValue(t, k.at);
    if (!v) return null;
    // a quoted value for a number or boolean parameter is typed by the schema
    args[k.key] = typeof v.value === 'string' ? coerceParamValue(v.value, paramSchema(tool, k.key)) : v.value;
    i = skipWs(t, v.end);
    if (t[i] === ',') i = skipWs(t, i + 1);
  }
  return args;
}

/**
 * `'NAME'` at i, the tool named as Perl quotes a word (MiniMax-M2.7 writes `{tool => 'exec', …}`,
 * openclaw/openclaw#70331): a name's characters only between the quotes, else null.
 */
const QUOTED_NAME = /'([\w.-]+)'/y;
function singleQuotedName(s: string, i: number): { value: string; end: number } | null {
  QUOTED_NAME.lastIndex = i;
  const r = QUOTED_NAME.exec(s);
  return r ? { value: r[1] as string, end: i + r[0].length } : null;
}

/** `{tool => "NAME", args => {…}}`, the whole body; null when the body is anything else. */
function readBlock(body: string, ctx: ParseContext): ParsedCall | null {
  let i = skipWs(body, 0);
  if (body[i] !== '{') return null;
  i = skipWs(body, i + 1);
  if (!body.startsWith('tool', i)) return null;
  i = skipWs(body, i + 4);
  if (!body.startsWith(ARROW, i)) return null;
  i = skipWs(body, i + ARROW.length);
  const n = body[i] === "'" ? singleQuotedName(body, i) : jsonValue(body, i);
  if (!n || typeof n.value !== 'string') return null;
  const name = n.value;
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  i = skipWs(body, n.end);
  if (body[i] === ',') i = skipWs(body, i + 1);
  let args: Record<string, unknown> | null = createArgs();
  if (body.startsWith('args', i)) {
    i = skipWs(body, i + 4);
    if (!body.startsWith(ARROW, i)) return null;
    i = skipWs(body, i + ARROW.length);
    if (body[i] !== '{') return null;
    const scan = scanJsonValue(body, i);
    if (!scan || scan.end < 0) return null;
    const asJson = jsonValue(body, i);
    args =
      asJson && asJson.value !== null && typeof asJson.value === 'object' && !Array.isArray(asJson.value)
        ? (asJson.value as Record<string, unknown>)
        : readArgs(body.slice(i + 1, scan.end - 1), name, ctx);
    if (!args) return null;
    i = skipWs(body, scan.end);
  }
  if (body[i] !== '}') return null;
  if (skipWs(body, i + 1) !== body.length) return null;
  if (!fitsSchema(args, tool)) return null;
  return { name, arguments: args };
}

const envelope = closedEnvelope({
  open: OPEN,
  end: END,
  read: (body, ctx) => {
    const call = readBlock(body, ctx);
    return call ? { calls: [call] } : { error: 'not a bracket-arrow call for a declared tool' };
  },
  // the envelope is this family's only when it opens with `{tool =>`: other bodies (JSON, a
  // Python call) stay for the improvised reader, which strips the same wrapper
  accept: (text, bodyStart, final) => {
    const j = peekNonWs(text, bodyStart, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end' || text[j] !== '{') return 'no';
    const k = skipWs(text, j + 1);
    if (k >= text.length) return final ? 'no' : 'need-more';
    const w = expectLiteral(text, k, 'tool', final);
    return w === 'yes' ? 'yes' : w;
  },
});

/** `[Tool Call] name=NAME id=ID args={json}` (an agent's own log line for a call, written back). */
const LOG_LINE = '[Tool Call] ';

/**
 * The second bracketed notation (issue 30, class 3): `[Tool Call] name=NAME id=ID args={json}`
 * (onyx-dot-app/onyx#14931, Ornith-1.5-9B), the `id=` optional. Read only as exactly that: a
 * declared tool's name, one strict JSON object that fits its schema; the call ends after the
 * object (text after it is content). Anything else leaves the line as text.
 */
function logLine({ text, start, marker, final, ctx }: MatchInput): MatchResult {
  let i = start + marker.length;
  const field = (key: string): number | 'need-more' | null => {
    const e = expectLiteral(text, i, key, final);
    if (e !== 'yes') return e === 'need-more' ? e : null;
    let k = i + key.length;
    while (k < text.length && !/\s/.test(text[k] ?? '')) k++;
    if (k >= text.length && !final) return 'need-more';
    return k;
  };
  const n = field('name=');
  if (n === null || n === 'need-more') return n;
  const name = text.slice(i + 'name='.length, n);
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  i = skipWs(text, n);
  if (i >= text.length) return final ? null : 'need-more';
  const id = expectLiteral(text, i, 'id=', final);
  if (id === 'need-more') return id;
  if (id === 'yes') {
    const k = field('id=');
    if (k === null || k === 'need-more') return k;
    i = skipWs(text, k);
  }
  const a = expectLiteral(text, i, 'args=', final);
  if (a !== 'yes') return a === 'need-more' ? a : null;
  i += 'args='.length;
  if (i >= text.length) return final ? null : 'need-more';
  if (text[i] !== '{') return null;
  const scan = scanJsonValue(text, i);
  if (!scan) return null;
  if (scan.end < 0) return final ? null : 'need-more';
  const value = strictObject(text, i, scan.end);
  if (value === null) return null;
  if (!fitsSchema(value, tool)) return null;
  return { end: scan.end, calls: [{ name, arguments: value }] };
}

export const bracketArrow = defineFamily({
  name: 'bracket-arrow',
  markers: [OPEN, LOG_LINE],
  priority: 44,
  backend: {},
  // a block it cannot read for a declared tool stays text, with an 'unrecovered' record
  match: (input) => (input.marker === LOG_LINE ? logLine(input) : envelope(input)),
});
