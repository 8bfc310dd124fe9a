/**
 * Qwen3-Coder / Qwen3 XML: <tool_call><function=NAME><parameter=P>value</parameter>…</function></tool_call>.
 * The <tool_call> wrapper is optional in practice. Values are raw text typed by the declared
 * schema (a declared string stays verbatim). Like the peers' parsers, exactly one leading and
 * one trailing newline of a value are stripped: the template puts the value on its own lines.
 * A body that is JSON (<function=NAME>{…}</function>, the Llama 3.1 custom-tool style) is read
 * as JSON arguments.
 */
import { slipGate, trailingCloseSlip, trailingPartialClose } from '../kit/close-slip.js';
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';

type Find = MatchInput['find'];
import type { DeclaredTool, ParseContext, ParsedCall } from '../types.js';
import { decodeBody, finishMatch, peekNonWs } from '../kit/envelope.js';
import { expectLiteral, scanJsonValue, skipWs, strictObject } from '../kit/json-scan.js';
import {
  allFitDeclared,
  coerceParamValue,
  createArgs,
  fitsSchema,
  paramSchema,
} from '../kit/schema-values.js';
import { StringSet } from '../../protocol/string-set.js';
import { announces, LEAD_MAX } from '../engine/lead-in.js';

const WRAP_OPEN = '<tool_call>';
const WRAP_CLOSE = '</tool_call>';
const FN_OPEN = '<function=';
const FN_CLOSE = '</function>';
const P_OPEN = '<parameter=';
const P_CLOSE = '</parameter>';

/**
 * How the newlines around a raw value are read: 'each' strips one leading and one trailing
 * newline (Qwen3-Coder's template puts the value on its own lines); 'pair' strips them only
 * when both are there (Seed-OSS writes `<parameter=p>value</parameter>`, so a lone trailing
 * newline belongs to the value: `pass\n` stays `pass\n`, as llama.cpp reads it).
 */
export type NewlineRule = 'each' | 'pair';

function leadingNewline(s: string): number {
  return s.startsWith('\r\n') ? 2 : s.startsWith('\n') ? 1 : 0;
}

function trailingNewline(s: string): number {
  return s.endsWith('\r\n') ? 2 : s.endsWith('\n') ? 1 : 0;
}

function stripNewlines(v: string, rule: NewlineRule): string {
  const lead = leadingNewline(v);
  const trail = lead < v.length ? trailingNewline(v.slice(lead)) : 0;
  if (rule === 'pair' && (lead === 0 || trail === 0)) return v;
  return v.slice(lead, v.length - trail);
}

/** Reads `<function=…>…</function>` blocks from body; error when anything else is in it. */
export function readFunctions(
  body: string,
  ctx: ParseContext,
  truncated: boolean,
  newlines: NewlineRule = 'each',
): { calls: ParsedCall[] } | { error: string } {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    if (!body.startsWith(FN_OPEN, i)) return { error: 'unexpected text in tool call' };
    const gt = body.indexOf('>', i + FN_OPEN.length);
    if (gt < 0) return { error: 'unterminated function tag' };
    const name = body.slice(i + FN_OPEN.length, gt).trim();
    if (name === '' || /[\s<]/.test(name)) return { error: 'bad function name' };
    const close = body.indexOf(FN_CLOSE, gt + 1);
    // `</functon>` as the body's last tag: the function's close, misspelled (kit/close-slip.ts)
    const slip = close < 0 ? trailingCloseSlip(body, 'function') : -1;
    if (slip > gt) {
      const call = readParameters(name, body.slice(gt + 1, slip), ctx, false, newlines);
      if (!('error' in call) && slipGate([call], ctx)) {
        calls.push({ ...call, repairs: [...(call.repairs ?? []), 'mismatched-close-tag'] });
        break;
      }
    }
    const inner = body.slice(gt + 1, close < 0 ? body.length : close);
    if (close < 0 && !truncated) return { error: 'unclosed function' };
    const call = readParameters(name, inner, ctx, close < 0, newlines);
    if ('error' in call) return call;
    calls.push(call);
    i = close < 0 ? body.length : skipWs(body, close + FN_CLOSE.length);
  }
  return calls.length > 0 ? { calls } : { error: 'no function in tool call' };
}

/** `text` when it is exactly one JSON string: its value, else null. */
function jsonString(text: string): string | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** One `key="value"` or `key=token` of a function body written as attributes (sticky: linear). */
const ATTR_PAIR = /[ \t\r\n]*([A-Za-z_][\w.-]*)=(?:"([^"\\<>]*)"|([^\s"'<>=]+))/y;

/**
 * Near miss (recall23, repair `attribute-arguments`): the function's arguments written as
 * attributes on one line instead of `<parameter=…>` tags, Qwen3.8-27B's
 * `<function=websearch>\nquery="Flowable … REST" numResults=5` (jundot/omlx#3153). Where each
 * value ends is certain or the body is refused: a quoted value holds no quote, backslash or angle
 * bracket, and a bare value (no blank, quote or bracket in it) is taken only for a parameter the
 * schema types as a number, an integer or a boolean (a bare word could be the start of a
 * sentence). Every key is a parameter the declared tool declares, once; the engine takes the call
 * only when the arguments fit the schema (SCHEMA_GATED). Null when the body is anything else.
 */
function attributeArguments(inner: string, tool: DeclaredTool | undefined): Record<string, unknown> | null {
  if (!tool) return null;
  const t = inner.trimEnd();
  const args = createArgs();
  const seen = new Set<string>();
  let pos = 0;
  while (pos < t.length) {
    ATTR_PAIR.lastIndex = pos;
    const m = ATTR_PAIR.exec(t);
    if (!m) return null;
    const key = m[1]!;
    const schema = paramSchema(tool, key);
    if (schema === undefined || seen.has(key)) return null;
    seen.add(key);
    if (m[2] !== undefined) args[key] = coerceParamValue(m[2], schema, { untyped: 'string' });
    else {
      const v = coerceParamValue(m[3]!, schema, { untyped: 'string' });
      if (typeof v !== 'number' && typeof v !== 'boolean') return null;
      args[key] = v;
    }
    pos = ATTR_PAIR.lastIndex;
  }
  return seen.size > 0 ? args : null;
}

function readParameters(
  name: string,
  inner: string,
  ctx: ParseContext,
  truncated: boolean,
  newlines: NewlineRule,
): ParsedCall | { error: string } {
  const tool = ctx.tools.get(name);
  let i = skipWs(inner, 0);
  if (inner[i] === '{' || inner.startsWith('```', i)) {
    // ended at </function> or at the end of output: a last `}` missing is missing right before
    // an end (missing-brace; the engine takes it before a tag only for arguments that fit)
    const d = decodeBody(inner, true);
    if (!d) return { error: 'function body is not JSON' };
    return { name, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) };
  }
  if (inner[i] === '"') {
    // the arguments object sent as one JSON string (`<function=NAME>"{\"k\": 1}"</function>`,
    // as models double-encode `arguments`): the engine decodes it (repair string-arguments)
    const s = jsonString(inner.trim());
    if (s === null || !s.trimStart().startsWith('{')) return { error: 'function body is not JSON' };
    return { name, arguments: s };
  }
  if (i < inner.length && !inner.startsWith(P_OPEN, i)) {
    const attrs = attributeArguments(inner, tool);
    if (attrs === null) return { error: 'unexpected text in function' };
    return { name, arguments: attrs, repairs: ['attribute-arguments'] };
  }
  const args = createArgs();
  // next </parameter> and <parameter= positions, searched again only once passed: linear overall
  let pc = -2;
  let np = -2;
  while (i < inner.length) {
    if (!inner.startsWith(P_OPEN, i)) return { error: 'unexpected text in function' };
    const gt = inner.indexOf('>', i + P_OPEN.length);
    if (gt < 0) return { error: 'unterminated parameter tag' };
    const key = inner.slice(i + P_OPEN.length, gt).trim();
    if (key === '') return { error: 'empty parameter name' };
    if (pc !== -1 && pc <= gt) pc = inner.indexOf(P_CLOSE, gt + 1);
    if (np !== -1 && np <= gt) np = inner.indexOf(P_OPEN, gt + 1);
    let end: number;
    let next: number;
    if (pc >= 0 && (np < 0 || pc < np)) {
      end = pc;
      next = pc + P_CLOSE.length;
    } else {
      // a missing </parameter>: the value runs to the next parameter, or to the end if truncated
      if (np < 0 && !truncated) return { error: 'unclosed parameter' };
      end = np < 0 ? inner.length : np;
      next = end;
    }
    const raw = stripNewlines(inner.slice(gt + 1, end), newlines);
    args[key] = coerceParamValue(raw, paramSchema(tool, key), { untyped: 'string' });
    i = skipWs(inner, next);
  }
  return { name, arguments: args };
}

/**
 * A value may itself hold tool-call markup (a file whose content is a parser fixture, a chat
 * template, a nested example call: vLLM's test_qwen3_xml_coder_shared.py): such markup stays
 * literal. Read structurally: inside a value every `<parameter=` opens a literal that its next
 * `</parameter>` closes, and only a `</parameter>` at depth 0 followed (after blanks) by
 * `</function>`, `</tool_call>` or `<parameter=NAME>` for a declared parameter NAME ends the
 * value. null: no such end (a `</parameter>` left out: the plain reading decides); 'need-more':
 * the text so far cannot tell yet.
 */
function structuralValueEnd(
  text: string,
  from: number,
  params: ReadonlySet<string> | null,
  final: boolean,
): { end: number; next: number } | 'need-more' | null {
  let depth = 0;
  let i = from;
  // next </parameter> and <parameter= positions, searched again only once passed: linear
  let c = -2;
  let o = -2;
  for (;;) {
    if (c !== -1 && c < i) c = text.indexOf(P_CLOSE, i);
    if (c < 0) return final ? null : 'need-more';
    if (o !== -1 && o < i) o = text.indexOf(P_OPEN, i);
    if (o >= 0 && o < c) {
      depth++;
      i = o + P_OPEN.length;
      continue;
    }
    i = c + P_CLOSE.length;
    if (depth > 0) {
      depth--;
      continue;
    }
    const k = skipWs(text, i);
    const after = structuralAfter(text, k, params, final);
    if (after === 'need-more') return after;
    if (after) return { end: c, next: i };
  }
}

/** Does the text at k continue the call's structure (a parameter's end is real before it)? */
function structuralAfter(
  text: string,
  k: number,
  params: ReadonlySet<string> | null,
  final: boolean,
): boolean | 'need-more' {
  if (k >= text.length) return final ? false : 'need-more';
  for (const lit of [FN_CLOSE, WRAP_CLOSE]) {
    const e = expectLiteral(text, k, lit, final);
    if (e !== 'no') return e === 'yes' ? true : 'need-more';
  }
  const p = expectLiteral(text, k, P_OPEN, final);
  if (p !== 'yes') return p === 'need-more' ? 'need-more' : false;
  const gt = text.indexOf('>', k + P_OPEN.length);
  if (gt < 0) return final ? false : 'need-more';
  const name = text.slice(k + P_OPEN.length, gt).trim();
  return params === null ? name !== '' && !/[\s<]/.test(name) : params.has(name);
}

/** One `<function=NAME>` … `</function>` read structurally from i: the call and the index after it. */
function structuralFunction(
  text: string,
  i: number,
  ctx: ParseContext,
  final: boolean,
): { call: ParsedCall; end: number } | 'need-more' | null {
  const gt = text.indexOf('>', i + FN_OPEN.length);
  if (gt < 0) return final ? null : 'need-more';
  const name = text.slice(i + FN_OPEN.length, gt).trim();
  if (name === '' || /[\s<]/.test(name)) return null;
  const tool = ctx.tools.get(name);
  const props = tool?.parameters?.['properties'];
  const params =
    props !== null && typeof props === 'object' && Object.keys(props).length > 0
      ? new StringSet(Object.keys(props))
      : null;
  const args = createArgs();
  let p = skipWs(text, gt + 1);
  for (;;) {
    const fn = expectLiteral(text, p, FN_CLOSE, final);
    if (fn === 'yes') return { call: { name, arguments: args }, end: p + FN_CLOSE.length };
    const po = expectLiteral(text, p, P_OPEN, final);
    if (fn === 'need-more' || po === 'need-more') return 'need-more';
    if (po !== 'yes') return null;
    const kgt = text.indexOf('>', p + P_OPEN.length);
    if (kgt < 0) return final ? null : 'need-more';
    const key = text.slice(p + P_OPEN.length, kgt).trim();
    if (key === '' || key.includes('<')) return null;
    const v = structuralValueEnd(text, kgt + 1, params, final);
    if (v === null || v === 'need-more') return v;
    const raw = stripNewlines(text.slice(kgt + 1, v.end), 'each');
    args[key] = coerceParamValue(raw, paramSchema(tool, key), { untyped: 'string' });
    p = skipWs(text, v.next);
  }
}

/**
 * `<function=…>` blocks from j up to the `</tool_call>` after the last one, read structurally
 * (tool-call markup inside a value stays in the value); null when the envelope does not read
 * that way, and the plain reading decides.
 */
function structuralWrapped(
  text: string,
  j: number,
  ctx: ParseContext,
  final: boolean,
): { calls: ParsedCall[]; end: number; truncated?: true; closeCut?: true } | 'need-more' | null {
  const calls: ParsedCall[] = [];
  let i = j;
  for (;;) {
    const f = structuralFunction(text, i, ctx, final);
    if (f === null || f === 'need-more') return f;
    calls.push(f.call);
    const k = skipWs(text, f.end);
    const close = expectLiteral(text, k, WRAP_CLOSE, final);
    if (close === 'yes') return { calls, end: k + WRAP_CLOSE.length };
    // recall14: the output ends inside `</tool_call>` (`</tool_ca`): the wrapper left open
    if (final && trailingPartialClose(text, WRAP_CLOSE) === k)
      return { calls, end: text.length, truncated: true, closeCut: true };
    const next = expectLiteral(text, k, FN_OPEN, final);
    if (close === 'need-more' || next === 'need-more' || (k >= text.length && !final)) return 'need-more';
    if (next !== 'yes') return null;
    i = k;
  }
}

/**
 * Near miss (issue 30, repair `parameter-for-function`): a wrapped call opened with
 * `<parameter=NAME>` where `<function=NAME>` belongs, the rest intact:
 * `<tool_call><parameter=bash><parameter=command>ls</parameter></function></tool_call>`
 * (antirez/ds4#1050, a Qwen3.6-class model). Read only when NAME is a declared tool, the body
 * with that one tag swapped reads strictly as one or more functions to declared tools, and
 * every call's arguments fit its schema; else `<tool_call>` is not this family's, as before.
 */
function parameterForFunction(
  text: string,
  j: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
): MatchResult {
  const p = expectLiteral(text, j, P_OPEN, final);
  if (p !== 'yes') return p === 'need-more' ? p : null;
  const gt = find('>', j + P_OPEN.length);
  if (gt < 0) return final ? null : 'need-more';
  const tool = ctx.tools.get(text.slice(j + P_OPEN.length, gt).trim());
  if (!tool) return null;
  return swappedOpen(
    text,
    FN_OPEN + text.slice(j + P_OPEN.length, gt + 1),
    gt + 1,
    final,
    ctx,
    find,
    'parameter-for-function',
  );
}

/** The longest tool name OpenAI's API takes: a longer `<NAME>` is no element for a function. */
const MAX_TOOL_NAME = 64;

/**
 * Near miss (recall24, repair `element-for-function`): a wrapped call opened with an element
 * named after the tool, `<NAME>`, where `<function=NAME>` belongs, the rest Qwen3-Coder's:
 * `<tool_call>\n<read>\n<parameter=filePath>\n…\n</parameter>\n</function>\n</tool_call>`
 * (Qwen3.6 27B and 9B under OpenCode, anomalyco/opencode#30061). Read only when NAME is exactly a
 * declared tool (no attribute, no blank), a `<parameter=` follows it, the body with that one tag
 * swapped reads strictly as functions to declared tools (each closed by `</function>`), and every
 * call's arguments fit its schema; else `<tool_call>` is not this family's, as before.
 */
function elementForFunction(
  text: string,
  j: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
): MatchResult {
  if (text.charCodeAt(j) !== 0x3c) return null;
  const gt = find('>', j + 1);
  if (gt < 0 || gt - j - 1 > MAX_TOOL_NAME)
    return gt < 0 && !final && text.length - j - 1 <= MAX_TOOL_NAME ? 'need-more' : null;
  const name = text.slice(j + 1, gt);
  if (!ctx.tools.has(name)) return null;
  const k = peekNonWs(text, gt + 1, final);
  if (k === 'need-more') return k;
  if (k === 'end') return null;
  const p = expectLiteral(text, k, P_OPEN, final);
  if (p !== 'yes') return p === 'need-more' ? p : null;
  return swappedOpen(text, `${FN_OPEN}${name}>`, gt + 1, final, ctx, find, 'element-for-function');
}

/**
 * The two near misses' reading: the wrapped body from `from` to `</tool_call>`, behind `open` (the
 * `<function=NAME>` the model should have written), read strictly as functions to declared tools
 * whose arguments fit, the first call carrying `repair`; else not this family's.
 */
function swappedOpen(
  text: string,
  open: string,
  from: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
  repair: string,
): MatchResult {
  const close = find(WRAP_CLOSE, from);
  if (close < 0) return final ? null : 'need-more';
  const read = readFunctions(open + text.slice(from, close), ctx, false);
  if ('error' in read) return null;
  if (!allFitDeclared(read.calls, ctx)) return null;
  read.calls[0]!.repairs = [...(read.calls[0]!.repairs ?? []), repair];
  return finishMatch(read, close + WRAP_CLOSE.length, false);
}

function matchWrapped(
  text: string,
  start: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
): MatchResult {
  const bodyStart = start + WRAP_OPEN.length;
  const j = peekNonWs(text, bodyStart, final);
  if (j === 'need-more') return 'need-more';
  if (j === 'end') return null;
  const fn = expectLiteral(text, j, FN_OPEN, final);
  if (fn === 'no') {
    const p = parameterForFunction(text, j, final, ctx, find);
    if (p !== null) return p;
    const e = elementForFunction(text, j, final, ctx, find);
    return e !== null ? e : sentenceBeforeFunctions(text, j, final, ctx, find);
  }
  if (fn !== 'yes') return 'need-more';
  const walked = structuralWrapped(text, j, ctx, final);
  if (walked === 'need-more') return walked;
  const close = find(WRAP_CLOSE, j);
  if (!walked?.calls.every((c) => ctx.tools.has(c.name))) {
    // nearmiss19: a Llama near miss inside the wrapper is read as the bare one is, wrapper and all
    const near = wrappedNearMiss(text, j, close, final, ctx, find);
    if (near) return near;
  }
  if (walked)
    return {
      ...finishMatch(walked, walked.end, walked.truncated === true),
      ...(walked.closeCut ? { closeCut: true } : {}),
    };
  if (close < 0) {
    if (!final) return 'need-more';
    return finishMatch(readFunctions(text.slice(j), ctx, true), text.length, true);
  }
  // </tool_call> ends whatever it holds: a function or parameter left open inside runs to it
  // (a Qwen3-Coder call without </parameter></function>, vllm#21571 in wild4.json), as the peers read it
  const body = text.slice(j, close);
  const strict = readFunctions(body, ctx, false);
  if (!('error' in strict)) return finishMatch(strict, close + WRAP_CLOSE.length, false);
  const open = readFunctions(body, ctx, true);
  if ('error' in open)
    return (
      wrappedBesideText(text, j, close, ctx, find) ?? finishMatch(strict, close + WRAP_CLOSE.length, false)
    );
  for (const call of open.calls) call.repairs = [...(call.repairs ?? []), 'closed-by-wrapper'];
  return finishMatch(open, close + WRAP_CLOSE.length, false);
}

/** Sentence punctuation a sentence before the functions inside the wrapper ends with (as a lead-in's). */
const SENTENCE_END = /[.:!…。：！]$/;

/**
 * `<tool_call>Sure.\n<function=t>…</function>\n</tool_call>` (recall20, the open case sessions19
 * left): a short announcing sentence inside the wrapper before its first function. Read as
 * wrappedBesideText reads text beside the functions (every function strict, declared and
 * fitting; the text content, the wrapper's tags with the calls), and only when the sentence passes
 * the lead-in rules (`announces`) and ends a sentence. Until the first `<function=` the text is
 * held only while it could still be such a sentence (no other `<`, no `>`, brackets or backtick,
 * at most LEAD_MAX); anything else is as before (the bare function is read, the wrapper's opening
 * tag and the text stay content).
 */
function sentenceBeforeFunctions(
  text: string,
  j: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
): MatchResult {
  const limit = Math.min(text.length, j + LEAD_MAX + 1);
  let f = -1;
  for (let i = j; i < limit; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x3c) {
      const lit = expectLiteral(text, i, FN_OPEN, final);
      if (lit === 'yes') f = i;
      else if (lit === 'need-more') return 'need-more';
      if (f < 0) return null;
      break;
    }
    if (ch === 0x3e || ch === 0x7b || ch === 0x7d || ch === 0x5b || ch === 0x5d || ch === 0x60) return null;
  }
  if (f < 0) return limit === text.length && limit - j <= LEAD_MAX && !final ? 'need-more' : null;
  const prose = text.slice(j, f).trim();
  if (!SENTENCE_END.test(prose) || !announces(prose, ctx)) return null;
  const close = find(WRAP_CLOSE, f);
  if (close < 0) return final ? null : 'need-more';
  return wrappedBesideText(text, j, close, ctx, find);
}

/** Tool-call markup: text holding it beside the functions is not prose. */
const MARKUP = /<\/?(?:tool_call|function|parameter)\b/;

/**
 * Well-formed functions inside a closed wrapper that also holds other text (sessions19):
 * `<tool_call><function=t>…</function>\nDone.\n</tool_call>`. Read only when every
 * `<function=` … `</function>` block between j and `</tool_call>` reads strictly as calls to
 * declared tools whose arguments fit their schemas, and the text around them holds no tool-call
 * markup: the calls are the ones the bare reading took, the text around them is content (its
 * ends trimmed, as the content sink would), and the wrapper's two tags go with the calls. Before,
 * the broken wrapper kept its tags as content beside that text, its leak was judged unrecovered,
 * and corrective retry re-asked a call that had been read.
 */
function wrappedBesideText(
  text: string,
  j: number,
  close: number,
  ctx: ParseContext,
  find: Find,
): EnvelopeMatch | null {
  const calls: ParsedCall[] = [];
  let prose = '';
  let i = j;
  while (i < close) {
    const open = find(FN_OPEN, i);
    const to = open < 0 || open >= close ? close : open;
    prose += text.slice(i, to);
    if (to === close) break;
    const fnClose = find(FN_CLOSE, open);
    if (fnClose < 0 || fnClose >= close) return null;
    const read = readFunctions(text.slice(open, fnClose + FN_CLOSE.length), ctx, false);
    if ('error' in read || !allFitDeclared(read.calls, ctx)) return null;
    for (const call of read.calls) calls.push(call);
    i = fnClose + FN_CLOSE.length;
  }
  const content = prose.trim();
  if (calls.length === 0 || content === '' || MARKUP.test(content)) return null;
  calls[0]!.repairs = [...(calls[0]!.repairs ?? []), 'text-in-wrapper'];
  return { ...finishMatch({ calls }, close + WRAP_CLOSE.length, false), content };
}

/** A name ends at the first of these: where a near miss puts its arguments instead of `>`. */
const NEAR_MISS_STOP = /[\s{(=>[<,]/;

/**
 * Llama 3.x near misses of `<function=NAME>{json}</function>` (issue 30), read only when the
 * strict reading failed or named no declared tool. Exactly one thing is wrong where the `>`
 * belongs, and each shape names its repair:
 * - `space-for-gt`: `<function=NAME {json}</function>`;
 * - `equals-for-gt`: `<function=NAME={json}</function>`;
 * - `missing-gt`: `<function=NAME{json}</function>`;
 * - `gt-after-arguments`: `<function=NAME{json}></function>` (also with a blank before the `{`);
 * - `parenthesized-arguments`: `<function=NAME({json})</function>`.
 * The body (after `<function=`, up to the first `</function>`, or to the end of output, where
 * the engine adds `unclosed-envelope`) must be exactly that: a declared tool's name, the one separator,
 * one strict JSON object that fits the tool's schema (fitsSchema), its closer, blanks. Anything
 * else (a second break, junk after the object, a second call, an undeclared name) is not read.
 * Sources: Groq's `failed_generation` of Llama 3.x (kagent-dev/kagent#1532,
 * tashfeenahmed/freellmapi#291, blogminhquy/javis-os#63, sipeed/picoclaw#748), where the
 * well-formed envelope is Llama 3.1's custom-tool format (meta-llama/llama-models, llama3_1
 * prompt_format.md).
 */
function llamaNearMiss(body: string, ctx: ParseContext): ParsedCall | null {
  let i = 0;
  while (i < body.length && !NEAR_MISS_STOP.test(body[i] ?? '')) i++;
  const name = body.slice(0, i);
  const tool = ctx.tools.get(name);
  if (!tool) return null;
  const sep = body[i] ?? '';
  let repair: string;
  let j = i;
  if (sep === '(') {
    repair = 'parenthesized-arguments';
    j = skipWs(body, i + 1);
  } else if (sep === '=') {
    repair = 'equals-for-gt';
    j = i + 1;
  } else if (sep === '{') repair = 'missing-gt';
  else if (/\s/.test(sep)) {
    repair = 'space-for-gt';
    j = skipWs(body, i);
  } else return null;
  if (body[j] !== '{') return null;
  const scan = scanJsonValue(body, j);
  if (!scan || scan.end < 0) return null;
  const value = strictObject(body, j, scan.end);
  if (value === null) return null;
  let k = skipWs(body, scan.end);
  if (repair === 'parenthesized-arguments') {
    if (body[k] !== ')') return null;
    k = skipWs(body, k + 1);
  } else if (body[k] === '>' && (repair === 'missing-gt' || repair === 'space-for-gt')) {
    // the `>` came after the arguments instead of before them: still the one break
    repair = 'gt-after-arguments';
    k = skipWs(body, k + 1);
  }
  if (k !== body.length) return null;
  if (!fitsSchema(value, tool)) return null;
  return { name, arguments: value, repairs: [repair] };
}

/**
 * Llama near misses (llamaNearMiss) as the wrapper's functions,
 * `<tool_call><function=NAME {json}</function></tool_call>` (nearmiss19): each
 * `<function=` … `</function>` block read as matchBare reads it (readBare), blanks between, up
 * to `</tool_call>` or, with none, to the end of output (the wrapper left open: the last block
 * may be cut, `unclosed-envelope`). Read only when every block reads: the calls are the ones
 * the bare reading would take after the broken wrapper, so only the wrapper's tags change
 * hands. Without it the broken wrapper kept its `<tool_call>` as content, and its unrecovered
 * leak sat beside the calls read inside it.
 */
function wrappedNearMiss(
  text: string,
  j: number,
  close: number,
  final: boolean,
  ctx: ParseContext,
  find: Find,
): MatchResult {
  if (close < 0 && !final) return null;
  // the output ends inside `</tool_call>` (`</tool_ca`): the wrapper left open, closeCut
  const wrapCut = close < 0 ? trailingPartialClose(text, WRAP_CLOSE) : -1;
  const stop = close >= 0 ? close : wrapCut > j ? wrapCut : text.length;
  const calls: ParsedCall[] = [];
  let i = j;
  while (i < stop) {
    if (!text.startsWith(FN_OPEN, i)) return null;
    let fnClose = find(FN_CLOSE, i);
    let to = fnClose + FN_CLOSE.length;
    if (fnClose < 0 || fnClose >= stop) {
      // the output ends inside the last function: as matchBare reads it, a cut `</functi` left out
      if (close >= 0 || wrapCut > j) return null;
      const cut = trailingPartialClose(text, FN_CLOSE);
      fnClose = cut > i + FN_OPEN.length ? cut : text.length;
      to = text.length;
    }
    const unclosed = to === text.length && !text.endsWith(FN_CLOSE);
    const read = readBare(
      readFunctions(text.slice(i, to), ctx, unclosed),
      text.slice(i + FN_OPEN.length, fnClose),
      ctx,
    );
    if ('error' in read) return null;
    for (const c of read.calls) calls.push(c);
    i = skipWs(text, to);
  }
  if (calls.length === 0) return null;
  const m = finishMatch({ calls }, close < 0 ? text.length : close + WRAP_CLOSE.length, close < 0);
  return wrapCut > j ? { ...m, closeCut: true } : m;
}

/** The strict reading, or the Llama near miss when the strict one fails or names no declared tool. */
function readBare(
  strict: { calls: ParsedCall[] } | { error: string },
  body: string,
  ctx: ParseContext,
): { calls: ParsedCall[] } | { error: string } {
  if (!('error' in strict) && strict.calls.every((c) => ctx.tools.has(c.name))) return strict;
  const near = llamaNearMiss(body, ctx);
  return near ? { calls: [near] } : strict;
}

function matchBare(text: string, start: number, final: boolean, ctx: ParseContext, find: Find): MatchResult {
  const close = find(FN_CLOSE, start);
  if (close < 0) {
    if (!final) return 'need-more';
    // unclosed: only the last function of the output may be (truncated output)
    // …and not one a </tool_call> follows: that output ended, so its value must not run over the tag
    if (find(FN_OPEN, start + FN_OPEN.length) >= 0 || find(WRAP_CLOSE, start) >= 0)
      return { end: text.length, calls: [], error: 'unclosed function' };
    // recall14: the output ends inside `</function>` (`</functi`): read without the cut closer
    const cut = trailingPartialClose(text, FN_CLOSE);
    const to = cut > start + FN_OPEN.length ? cut : text.length;
    const strict = readFunctions(text.slice(start, to), ctx, true);
    const m = finishMatch(readBare(strict, text.slice(start + FN_OPEN.length, to), ctx), text.length, true);
    return cut > start + FN_OPEN.length ? { ...m, closeCut: true } : m;
  }
  let end = close + FN_CLOSE.length;
  // a stray </tool_call> after a bare function belongs to the envelope
  const k = skipWs(text, end);
  const lit = expectLiteral(text, k, WRAP_CLOSE, final);
  if (lit === 'need-more' || (k >= text.length && !final)) return 'need-more';
  if (lit === 'yes') end = k + WRAP_CLOSE.length;
  const strict = readFunctions(text.slice(start, close + FN_CLOSE.length), ctx, false);
  return finishMatch(readBare(strict, text.slice(start + FN_OPEN.length, close), ctx), end, false);
}

/**
 * Near miss (issue 30, repair `missing-function-open`): the whole output is a bare function
 * whose opening lost `<function`, `=NAME><parameter=P>v</parameter></function>` (xalgorix#243,
 * a Qwen-style call logged by an agent), optionally followed by `</tool_call>`. Held only when
 * the output starts with `=` and a declared tool's name and `>` (wholeNameStarts); read only
 * when, with `<function` put back, it reads strictly as calls to declared tools whose arguments
 * fit their schemas, and nothing but blanks is left around it.
 */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const i = skipWs(text, 0);
  if (text[i] !== '=') return missingFunctionPrefix(text, i, ctx);
  let stop = text.length;
  while (stop > i && /\s/.test(text[stop - 1] ?? '')) stop--;
  if (text.startsWith(WRAP_CLOSE, stop - WRAP_CLOSE.length)) stop -= WRAP_CLOSE.length;
  const body = `<function${text.slice(i, stop)}`;
  if (!body.trimEnd().endsWith(FN_CLOSE)) return null;
  const read = readFunctions(body, ctx, false);
  if ('error' in read) return null;
  if (!allFitDeclared(read.calls, ctx)) return null;
  read.calls[0]!.repairs = [...(read.calls[0]!.repairs ?? []), 'missing-function-open'];
  return { end: text.length, calls: read.calls };
}

/**
 * Near miss (issue 30, repair `missing-function-prefix`): the whole output is a Llama 3.x call
 * that lost its `<function=` opener and its `>`, `NAME{json}</function>` (Groq's
 * failed_generation under smolagents, huggingface/smolagents#1119). The output starts with a
 * declared name right before `{` (held by the improvised family's name frame) and ends with the
 * one `</function>`; the object must be strict JSON that fits the tool's schema (llamaNearMiss,
 * `missing-gt`), nothing else around it but blanks.
 */
function missingFunctionPrefix(text: string, i: number, ctx: ParseContext): EnvelopeMatch | null {
  let stop = text.length;
  while (stop > i && /\s/.test(text[stop - 1] ?? '')) stop--;
  if (!text.startsWith(FN_CLOSE, stop - FN_CLOSE.length)) return null;
  const body = text.slice(i, stop - FN_CLOSE.length);
  if (body.includes(FN_CLOSE) || body.includes(FN_OPEN)) return null;
  const near = llamaNearMiss(body.trimEnd(), ctx);
  if (near === null || near.repairs?.[0] !== 'missing-gt') return null;
  near.repairs = ['missing-function-prefix'];
  return { end: text.length, calls: [near] };
}

export const qwen3Coder = defineFamily({
  name: 'qwen3-coder',
  markers: [WRAP_OPEN, FN_OPEN],
  priority: 21,
  backend: { vllm: 'qwen3_coder', llamacpp: 'Qwen3-Coder XML', sglang: 'qwen3_coder' },
  wholeNameStarts: [{ before: '=', after: ['>'] }],
  matchWhole,
  match({ text, start, marker, final, ctx, find }) {
    return marker === WRAP_OPEN
      ? matchWrapped(text, start, final, ctx, find)
      : matchBare(text, start, final, ctx, find);
  },
});
