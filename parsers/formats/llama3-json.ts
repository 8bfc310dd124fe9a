/**
 * Llama 3.x / 4 JSON tool calls: {"name": …, "parameters": …} after <|python_tag|>, inside
 * <|python_start|>…<|python_end|>, or bare. Several calls are separated by ';'.
 * Bare JSON (no tag) is strict: the WHOLE output must be the call object(s), with the Llama
 * key "parameters"; other bare JSON is left to the `json` family (or stays prose).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import { announces } from '../engine/lead-in.js';
import type { DeclaredTool, ParseContext, ParsedCall } from '../types.js';
import { callFromObject, peekNonWs } from '../kit/envelope.js';
import { gated } from '../kit/improvised-call.js';
import { expectLiteral, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { decodeJsonLenient, isPlainObject } from '../kit/lenient-json.js';
import { parsePythonLiteral } from '../kit/python-literal.js';

const TAG = '<|python_tag|>';
const START = '<|python_start|>';
const END = '<|python_end|>';
const EOM = ['<|eom_id|>', '<|eot_id|>'];

/** Reads `{…}; {…}` from i; returns the calls and where the list ended, or why it failed. */
function readObjects(
  text: string,
  i: number,
  limit: number,
  allowMissingClose: boolean,
  requireParametersKey = false,
  newlineSeparates = false,
): { calls: ParsedCall[]; end: number } | { error: string; end: number } | 'incomplete' {
  const calls: ParsedCall[] = [];
  let at = skipWs(text, i);
  for (;;) {
    if (at >= limit || text[at] !== '{') return { error: 'not a JSON call', end: at };
    const scan = scanJsonValue(text, at, { stopAt: [TAG, START] });
    if (scan?.stoppedAt !== undefined) return { error: 'unterminated JSON', end: scan.stoppedAt };
    let end = scan?.end ?? -1;
    let repairs: string[] = [];
    if (end < 0 || end > limit) {
      if (!allowMissingClose) return 'incomplete';
      end = limit;
    }
    const d = decodeJsonLenient(text.slice(at, end), {
      allowMissingClose: allowMissingClose && end === limit,
    });
    const call = d ? callFromObject(d.value) : null;
    if (!d || !call) return { error: 'not a JSON call', end };
    if (requireParametersKey && !(isPlainObject(d.value) && 'parameters' in d.value))
      return { error: 'no parameters key', end };
    repairs = d.repairs;
    calls.push(repairs.length ? { ...call, repairs } : call);
    const k = skipWs(text, end);
    if (k < limit && text[k] === ';') {
      const n = skipWs(text, k + 1);
      if (n >= limit) return { calls, end: n };
      at = n;
      continue;
    }
    // Llama 3.2 also puts parallel calls on their own lines, with no ';'
    if (newlineSeparates && text[k] === '{' && text.slice(end, k).includes('\n')) {
      at = k;
      continue;
    }
    return { calls, end };
  }
}

function matchTag(
  text: string,
  start: number,
  final: boolean,
  find: (l: string, f: number) => number,
): MatchResult {
  const bodyStart = start + TAG.length;
  const j = peekNonWs(text, bodyStart, final);
  if (j === 'need-more') return 'need-more';
  if (j === 'end') return { end: text.length, calls: [], error: 'empty python_tag', truncated: true };
  if (text[j] !== '{') return { end: j, calls: [], error: 'python_tag without a JSON call' };
  // the list ends at end of output or at an end-of-message token
  let limit = text.length;
  for (const t of EOM) {
    const e = find(t, j);
    if (e >= 0 && e < limit) limit = e;
  }
  const r = readObjects(text, j, limit, final && limit === text.length);
  if (r === 'incomplete') return 'need-more';
  if ('error' in r) return { end: r.end, calls: [], error: r.error };
  // a ';', whitespace or a partial end token at the end may still be followed by more
  let end = r.end;
  const k = skipWs(text, end);
  if (!final && limit === text.length) {
    if (k >= text.length || text[k] === ';') return 'need-more';
    for (const t of EOM) if (expectLiteral(text, k, t, false) === 'need-more') return 'need-more';
  }
  for (const t of EOM) if (text.startsWith(t, k)) end = k + t.length;
  // a brace the end of output left open: with finish reason `length`, a call cut off
  const open = limit === text.length && r.calls.some((c) => c.repairs?.includes('missing-brace'));
  return { end, calls: r.calls, ...(open ? { truncated: true } : {}) };
}

function matchStart(
  text: string,
  start: number,
  final: boolean,
  find: (l: string, f: number) => number,
): MatchResult {
  const bodyStart = start + START.length;
  const j = peekNonWs(text, bodyStart, final);
  if (j === 'need-more') return 'need-more';
  if (j === 'end' || text[j] !== '{') return null;
  const close = find(END, j);
  if (close < 0 && !final) return 'need-more';
  const limit = close < 0 ? text.length : close;
  const r = readObjects(text, j, limit, close < 0);
  if (r === 'incomplete') return { end: limit, calls: [], error: 'unterminated JSON' };
  const end = close < 0 ? text.length : close + END.length;
  if ('error' in r) return { end, calls: [], error: r.error };
  if (skipWs(text, r.end) < limit) return { end, calls: [], error: 'text after the calls' };
  return { end, calls: r.calls, ...(close < 0 ? { truncated: true } : {}) };
}

/**
 * Bare output: the text STARTS with {…}(;{…})* with the "parameters" key (calls also one per
 * line). Prose may follow when it is a new sentence (after a line break, or starting with a
 * capital): the model commenting after its call. A lowercase continuation ("{…} is what I
 * would send") makes the JSON the subject of a sentence: prose.
 */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const i = skipWs(text, 0);
  if (text[i] !== '{') return null;
  // strict: Llama's own "parameters" key; {"name","arguments"} is the json family's
  const r = readObjects(text, i, text.length, true, true, true);
  if (r === 'incomplete' || 'error' in r) {
    const m = mangledCall(text.trim(), ctx.tools);
    return m ? { end: text.length, calls: [m] } : null;
  }
  const calls = r.calls.map((c) => unwrapListedArgs(c, ctx.tools));
  const k = skipWs(text, r.end);
  // a brace the end of output left open: with finish reason `length`, a call cut off
  if (k >= text.length && calls.some((c) => c.repairs?.includes('missing-brace')))
    return { end: text.length, calls, truncated: true };
  if (k >= text.length) return { end: text.length, calls };
  // recall13: a closing fence alone on the last line with no fence opened (the model closed a
  // fence it never wrote): envelope text, gone with the calls (repair code-fence)
  if (text.slice(k).trimEnd() === '```' && text.slice(r.end, k).includes('\n'))
    return {
      end: text.length,
      calls: calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'code-fence'] })),
    };
  if (!text.slice(r.end, k).includes('\n') && !NEW_SENTENCE.test(text[k] ?? '')) return null;
  const more = secondRun(text, k, ctx);
  if (more) return { end: text.length, calls: [...calls, ...more.calls], content: more.lead };
  return { end: text.length, calls, content: text.slice(k) };
}

/**
 * recall15: a second run of calls after a short announcing sentence, ending the output, as Llama
 * 3.2 narrates two steps (`{…}\n\nThen I will make the change.\n\n{…}`): the sentence (from k)
 * passes the lead-in rules (`announces`: short, no explaining word, no question, nothing
 * call-shaped), the run starts a line and is the rest of the output, and every call of it names a
 * declared tool whose schema its arguments fit (repair `lead-in`). Else null: the sentence and the
 * run stay content, as before.
 */
function secondRun(text: string, k: number, ctx: ParseContext): { calls: ParsedCall[]; lead: string } | null {
  const at = text.indexOf('\n{', k);
  if (at < 0) return null;
  const lead = text.slice(k, at);
  if (!announces(lead, ctx)) return null;
  const r = readObjects(text, at + 1, text.length, false, true, true);
  if (r === 'incomplete' || 'error' in r || skipWs(text, r.end) < text.length) return null;
  const calls: ParsedCall[] = [];
  for (const c of r.calls.map((x) => unwrapListedArgs(x, ctx.tools))) {
    if (!isPlainObject(c.arguments) || !gated({ name: c.name, args: c.arguments }, ctx.tools)) return null;
    calls.push({ ...c, repairs: [...(c.repairs ?? []), 'lead-in'] });
  }
  return { calls, lead: lead.trimEnd() };
}

/**
 * Llama 3.2 3B (llama-stack's recordings) sometimes wraps its one arguments object in a list:
 * {"name": "get_weather", "parameters": [{"city": "Tokyo"}]}. Unwrapped only for a declared
 * tool whose schema the lone object fits; any other list stays as it was (and is refused later).
 */
function unwrapListedArgs(c: ParsedCall, tools: ReadonlyMap<string, DeclaredTool>): ParsedCall {
  const a = c.arguments;
  if (!Array.isArray(a) || a.length !== 1 || !isPlainObject(a[0])) return c;
  const call = gated({ name: c.name, args: a[0] }, tools);
  return call ? { ...c, arguments: call.args, repairs: [...(c.repairs ?? []), 'listed-arguments'] } : c;
}

/**
 * Llama 3.2 3B also garbles the separator after the "parameters" key, the rest of the call
 * intact: `"parameters={`, `"parameters {`, `"parameters "{`, `"parameters({`, `"parameters>{`,
 * `"parameters':{'city': 'NYC'}` (a Python dict follows), `"parameters\":{\"tz\": …}`
 * (the quotes escaped from there on), and once `{"name", "X", …` (a comma for the colon). Read only when the object is the WHOLE output, the
 * separator is at most 4 of those characters, at most two of `}` `"` `)` close it, the name is
 * a declared tool and the arguments fit its schema: anything else stays text.
 */
const MANGLED_HEAD = /^\{\s*"name"\s*([:,])\s*"([^"\\]{1,200})"\s*,\s*"parameters([\s"'\\=:>(]{0,4})\{/;

function mangledCall(t: string, tools: ReadonlyMap<string, DeclaredTool>): ParsedCall | null {
  const head = MANGLED_HEAD.exec(t);
  if (!head) return null;
  const [whole, nameSep, name = '', sep = ''] = head;
  // both separators intact is plain JSON, which readObjects already refused for another reason
  if (nameSep === ':' && sep.replace(/\s/g, '') === '":') return null;
  const from = whole.length - 1;
  for (let cut = 0; cut <= 2; cut++) {
    const tail = t.slice(t.length - cut);
    if (!/^[}")]*$/.test(tail)) break;
    const args = decodeArgs(t.slice(from, t.length - cut), sep);
    const call = args ? gated({ name, args }, tools) : null;
    if (call) return { name, arguments: call.args, repairs: ['mangled-separator'] };
  }
  return null;
}

function decodeArgs(body: string, sep: string): Record<string, unknown> | null {
  let value: unknown;
  if (sep.includes("'")) {
    const lit = parsePythonLiteral(body);
    if (!lit.ok) return null;
    value = lit.value;
  } else {
    try {
      value = JSON.parse(sep.includes('\\') ? body.replaceAll('\\"', '"') : body);
    } catch {
      return null;
    }
  }
  return isPlainObject(value) ? value : null;
}

const NEW_SENTENCE = /^\p{Lu}$/u;

export const llama3Json = defineFamily({
  name: 'llama3-json',
  markers: [TAG, START],
  priority: 30,
  backend: { vllm: 'llama3_json', llamacpp: 'Llama 3.x', sglang: 'llama3' },
  match({ text, start, marker, final, find }): MatchResult {
    return marker === TAG ? matchTag(text, start, final, find) : matchStart(text, start, final, find);
  },
  wholeStarts: ['{'],
  matchWhole,
});
