/**
 * Hermes / Qwen2.5: <tool_call>{"name": …, "arguments": …}</tool_call>, several in a row, the
 * last one possibly unclosed at end of output. <tool_call> is shared with GLM and Qwen3-Coder:
 * this family only claims it when a JSON object (or a ```json fence) follows. Several objects
 * separated by commas or line breaks inside one block are several calls.
 * Small models bend it (captures in tests/fixtures/parsers/wild.json, wild2.json): Gemma 3 writes a
 * Python-style call in the tag (`<tool_call>get_weather(city: "Paris")</tool_call>`), BitNet
 * puts the arguments flat beside the name, SmolLM3 opens a call with `</tool_call>`, Gemma 3
 * names the tool in `<function>NAME</function>` before bare arguments (wild2.json). Those
 * variants are read only for a declared tool whose schema the arguments fit. So is
 * `[Calling tool: NAME({…})]`, the line some MLX chat servers write for a past call in a Qwen
 * history, copied by the model (waybarrios/vllm-mlx tests/test_tool_parsers.py, QwenToolParser).
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { isNameSlip, slipGate } from '../kit/close-slip.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';
import { absorbRepeatedClose, callsFromJsonBody, finishMatch, peekNonWs } from '../kit/envelope.js';
import { readName, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { decodeObject, gated } from '../kit/improvised-call.js';
import { allFitDeclared, coerceParamValue, paramSchema } from '../kit/schema-values.js';
import { announces, LEAD_MAX } from '../engine/lead-in.js';
import { readImprovisedCalls } from '../kit/structured-reader.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const CALLING = '[Calling tool: ';
const CALLING_END = ')]';

type Body = { calls: ParsedCall[] } | { error: string };

/**
 * A JSON body; when it is no call object, the declared tool with its arguments flat beside the name.
 * `wholeBody`: the body is all the text up to `</tool_call>` (no text after it was set aside), so
 * quotes left unescaped inside its strings may be read (`unescaped-quotes`).
 */
function readJson(body: string, allowMissingClose: boolean, ctx: ParseContext, wholeBody = false): Body {
  const r = callsFromJsonBody(body, allowMissingClose);
  if (!('error' in r)) return r;
  const doubled = fromDoubledBraces(body, ctx);
  if (doubled) return doubled;
  // no {name, arguments} object: the schema-guided reader (flat arguments, other keys, …)
  const calls = readImprovisedCalls(body.trim(), ctx.tools);
  if (calls)
    return { calls: calls.map((c) => ({ name: c.name, arguments: c.args, repairs: ['flat-arguments'] })) };
  if (!wholeBody) return r;
  // quotes inside a string argument left unescaped (code, HTML, quoted speech): read only where
  // each such quote cannot end its string, and only for arguments that fit (SCHEMA_GATED)
  const stray = callsFromJsonBody(body, allowMissingClose, true);
  return 'error' in stray ? r : stray;
}

/**
 * `{{…}}`: the object inside one extra pair of braces, the escaped `{{` of a Python format string
 * copied from the prompt's example (Qwen2.5-72B, wild4.json). Read only when the inner object is
 * a call of a declared tool whose arguments fit its schema.
 */
function fromDoubledBraces(body: string, ctx: ParseContext): Body | null {
  const t = body.trim();
  if (!t.startsWith('{{') || !t.endsWith('}}')) return null;
  const calls = readImprovisedCalls(t.slice(1, -1), ctx.tools);
  return calls
    ? { calls: calls.map((c) => ({ name: c.name, arguments: c.args, repairs: ['doubled-braces'] })) }
    : null;
}

/**
 * `name(…)` in the tag, `name` a declared tool, up to the closing tag (or the end of output,
 * where a cut-off `</tool_` is dropped).
 */
function matchNamed(input: MatchInput, j: number): MatchResult {
  const { text, final, find, ctx } = input;
  const name = readName(text, j);
  const k = skipWs(text, j + name.length);
  if (k >= text.length && !final) return 'need-more';
  if (ctx.tools.has(name) && k > j + name.length && /[A-Za-z_]/.test(text[k] ?? '')) {
    return matchAttributes(input, name, k);
  }
  if (!ctx.tools.has(name) || text[k] !== '(') return null;
  const close = find(CLOSE, k);
  if (close < 0 && !final) return 'need-more';
  let body = (close < 0 ? text.slice(j) : text.slice(j, close)).trim();
  const cut = body.lastIndexOf('</');
  if (close < 0 && cut > 0 && CLOSE.startsWith(body.slice(cut))) body = body.slice(0, cut).trim();
  const read = readImprovisedCalls(body, ctx.tools);
  const call = read?.length === 1 ? read[0] : undefined;
  const end = close < 0 ? text.length : close + CLOSE.length;
  const truncated = close < 0 ? { truncated: true } : {};
  if (!call) {
    // A closed tag not readable this way is left to the pythonic family, which reads Python
    // call lists in this tag (SGLang's dialect, with its own checks). One cut off at the end of
    // output is claimed to the end: left unclaimed, every later `<tool_call>name(` in the rest
    // would be tried again to the end (quadratic on hostile output).
    if (close >= 0) return null;
    return { end, calls: [], error: 'call in the tag is not readable', ...truncated };
  }
  return { end, calls: [{ name: call.name, arguments: call.args, repairs: ['python-call'] }], ...truncated };
}

/** Sentence punctuation a sentence before the call inside the tag ends with (as a lead-in's). */
const SENTENCE_END = /[.:!…。：！]$/;

/**
 * `<tool_call>Sure. {"name": …}</tool_call>` (recall20, the known open case of sessions19): a short
 * announcing sentence inside the tag, then one JSON call object or list that runs to the closing
 * tag. The sentence is content, the tags go with the calls (repair `text-in-wrapper`), and only
 * when it passes the lead-in rules (`announces`: at most LEAD_MAX, no call-shaped text, no
 * explaining word, no question) and ends a sentence, the JSON reads strictly, and every call names
 * a declared tool whose schema its arguments fit. Until the first `{` or `[` the text is held only
 * while it could still be such a sentence (no `<`, `>`, `}`, `]` or backtick, at most LEAD_MAX);
 * the tag left open at the end of output, or anything else, is text as before.
 */
function matchProseThenCall({ text, final, find, ctx }: MatchInput, j: number): MatchResult {
  const limit = Math.min(text.length, j + LEAD_MAX + 1);
  let b = -1;
  for (let i = j; i < limit; i++) {
    const ch = text.charCodeAt(i);
    // the JSON: an object, or a list of them
    if (ch === 0x7b || ch === 0x5b) {
      b = i;
      break;
    }
    // markup, a closing bracket or a backtick: not a sentence (another family's envelope, code)
    if (ch === 0x3c || ch === 0x3e || ch === 0x5d || ch === 0x7d || ch === 0x60) return null;
  }
  if (b < 0) return limit === text.length && limit - j <= LEAD_MAX && !final ? 'need-more' : null;
  const prose = text.slice(j, b).trim();
  if (!SENTENCE_END.test(prose) || !announces(prose, ctx)) return null;
  const close = find(CLOSE, b);
  if (close < 0) return final ? null : 'need-more';
  const read = callsFromJsonBody(text.slice(b, close), false);
  if ('error' in read || !allFitDeclared(read.calls, ctx)) return null;
  read.calls[0]!.repairs = [...(read.calls[0]!.repairs ?? []), 'text-in-wrapper'];
  return { ...finishMatch(read, close + CLOSE.length, false), content: prose };
}

const ATTRIBUTE = /([A-Za-z_][\w-]*)\s*=\s*"([^"\n]*)"\s*/y;

/**
 * `NAME key="value" … />` in the tag, NAME a declared tool (an XML element without its `<`,
 * openclaw/openclaw#33258): the attributes are the arguments, typed by the schema; an attribute
 * `tool` or `name` that repeats NAME is dropped. The element must be closed (`/>` or `>`) and
 * followed only by the closing tag or the end of output; the arguments must fit the schema.
 * Anything else leaves the tag to the other readers (stays text).
 */
function matchAttributes({ text, final, find, ctx }: MatchInput, name: string, k: number): MatchResult {
  const close = find('>', k);
  if (close < 0) return final ? null : 'need-more';
  const selfClosing = text[close - 1] === '/';
  const attrEnd = selfClosing ? close - 1 : close;
  const tool = ctx.tools.get(name);
  const args: Record<string, unknown> = {};
  let at = k;
  while (at < attrEnd) {
    ATTRIBUTE.lastIndex = at;
    const m = ATTRIBUTE.exec(text);
    if (!m || m.index !== at || ATTRIBUTE.lastIndex > attrEnd) return null;
    const [, key = '', raw = ''] = m;
    at = ATTRIBUTE.lastIndex;
    if ((key === 'tool' || key === 'name') && raw === name) continue;
    if (Object.hasOwn(args, key)) return null;
    args[key] = coerceParamValue(raw, paramSchema(tool, key));
  }
  const after = skipWs(text, close + 1);
  let end: number;
  if (text.startsWith(CLOSE, after)) end = after + CLOSE.length;
  else if (after >= text.length || CLOSE.startsWith(text.slice(after))) {
    if (!final) return 'need-more';
    if (after < text.length) return null;
    end = text.length;
  } else return null;
  const call = gated({ name, args }, ctx.tools);
  if (!call) return null;
  return { end, calls: [{ name: call.name, arguments: call.args, repairs: ['attribute-arguments'] }] };
}

const FN_OPEN = '<function>';
const FN_CLOSE = '</function>';

/**
 * `<function>name</function>` then the bare arguments object, up to the closing tag (Gemma 3
 * and Qwen3.6 under mlx-omni-server, madroidmaq/mlx-omni-server#126): read only for a declared
 * name whose schema the arguments fit.
 */
function matchFunctionTag({ text, final, find, ctx }: MatchInput, j: number): MatchResult {
  const close = find(CLOSE, j);
  if (close < 0 && !final) return 'need-more';
  const end = close < 0 ? text.length : close + CLOSE.length;
  const body = text.slice(j + FN_OPEN.length, close < 0 ? text.length : close);
  const nameEnd = body.indexOf(FN_CLOSE);
  const name = nameEnd < 0 ? '' : body.slice(0, nameEnd).trim();
  const o = nameEnd < 0 ? null : decodeObject(body.slice(nameEnd + FN_CLOSE.length).trim());
  const call = o && name !== '' ? gated({ name, args: o }, ctx.tools) : null;
  const truncated = close < 0 ? { truncated: true } : {};
  if (!call) return { end, calls: [], error: 'call in the tag is not readable', ...truncated };
  return { end, calls: [{ name: call.name, arguments: call.args, repairs: ['function-tag'] }], ...truncated };
}

/** `[Calling tool: NAME({…})]`: a declared tool whose schema the JSON (or Python dict) arguments fit. */
function matchCallingTool({ text, start, final, find, ctx }: MatchInput): MatchResult {
  const j = start + CALLING.length;
  const name = readName(text, j);
  const k = j + name.length;
  if (k >= text.length) return final ? null : 'need-more';
  if (name === '' || text[k] !== '(') return null;
  const close = find(CALLING_END, k);
  if (close < 0) return final ? null : 'need-more';
  const args = decodeObject(text.slice(k + 1, close).trim());
  const call = args ? gated({ name, args }, ctx.tools) : null;
  if (!call) return null;
  return { end: close + CALLING_END.length, calls: [{ name: call.name, arguments: call.args }] };
}

/**
 * Closing tags small models write for `</tool_call>`, compared without case, blanks, `_` or `-`;
 * also any name one edit from it (`</tool_cal>`, `</tool_calll>`: kit/close-slip.ts).
 */
const SLIPS = new Set(['toolcall', 'toolcalls', 'tool', 'function', 'functioncall']);
const foldTag = (name: string) => name.replace(/[\s_-]/g, '').toLowerCase();
/** The longest slip looked at: `</` + a name + `>`, blanks included. */
const SLIP_MAX = 24;

/**
 * Where a mistyped closing tag at k ends (0: none there): `</NAME>` whose NAME is one of SLIPS,
 * or `<tool_call>` with only blanks after it to the end of output. Undecided while the tag may
 * still be arriving.
 */
function closeSlip(text: string, k: number, final: boolean): number | 'need-more' {
  if (text.startsWith(OPEN, k)) {
    const after = skipWs(text, k + OPEN.length);
    if (after < text.length) return 0;
    return final ? text.length : 'need-more';
  }
  if (text.length - k < OPEN.length && OPEN.startsWith(text.slice(k)) && !final) return 'need-more';
  if (text[k] !== '<') return 0;
  if (k + 1 >= text.length) return final ? 0 : 'need-more';
  if (text[k + 1] !== '/') return 0;
  // the `>` looked for within SLIP_MAX only: a long unclosed `</…` costs nothing per push
  const head = text.slice(k + 2, k + SLIP_MAX);
  const at = head.indexOf('>');
  if (at < 0) return !final && k + SLIP_MAX > text.length ? 'need-more' : 0;
  const gt = k + 2 + at;
  const name = foldTag(text.slice(k + 2, gt));
  return SLIPS.has(name) || isNameSlip(name, 'tool_call') ? gt + 1 : 0;
}

export const hermes = defineFamily({
  name: 'hermes',
  // a stray closing tag right before a JSON object opens a call (SmolLM3's typo); the
  // closing tag followed by anything else stays text
  markers: [OPEN, CLOSE, CALLING],
  priority: 20,
  backend: { vllm: 'hermes', llamacpp: 'Hermes 2 Pro', sglang: 'qwen25' },
  match(input): MatchResult {
    const m = matchTag(input);
    // `…</tool_call></tool_call>`: the repeat goes with a call read (repair doubled-close-tag)
    return input.marker === OPEN ? absorbRepeatedClose(m, input.text, input.final, CLOSE) : m;
  },
});

function matchTag(input: MatchInput): MatchResult {
  const { text, start, marker, final, find, ctx } = input;
  if (marker === CALLING) return matchCallingTool(input);
  const bodyStart = start + marker.length;
  const j = peekNonWs(text, bodyStart, final);
  if (j === 'need-more') return 'need-more';
  if (j === 'end') {
    if (marker === CLOSE) return null;
    return { end: text.length, calls: [], error: 'empty envelope', truncated: true };
  }
  const c = text[j];
  if (marker === CLOSE && c !== '{') return null;
  if (c === '<' && marker === OPEN && text.startsWith(FN_OPEN, j)) return matchFunctionTag(input, j);
  if (c === '<' && marker === OPEN && FN_OPEN.startsWith(text.slice(j)) && !final) return 'need-more';
  if (c !== '{' && c !== '`') {
    const named = matchNamed(input, j);
    return named !== null || marker !== OPEN ? named : matchProseThenCall(input, j);
  }
  if (c === '`') {
    const close = find(CLOSE, j);
    if (close < 0) {
      if (!final) return 'need-more';
      return finishMatch(readJson(text.slice(j), true, ctx), text.length, true);
    }
    return finishMatch(readJson(text.slice(j, close), false, ctx), close + CLOSE.length, false);
  }
  if (c !== '{') return null;
  const scan = scanJsonValue(text, j, { stopAt: [CLOSE, OPEN] });
  if (scan && scan.end > 0) {
    const k = skipWs(text, scan.end);
    if (text.startsWith(CLOSE, k)) {
      return finishMatch(readJson(text.slice(j, scan.end), false, ctx, true), k + CLOSE.length, false);
    }
    if (k >= text.length || CLOSE.startsWith(text.slice(k))) {
      if (!final) return 'need-more';
      const m = finishMatch(readJson(text.slice(j, scan.end), false, ctx), text.length, true);
      // the output ends inside `</tool_call>` (`</tool_ca`, 2+ code units): written whole
      return text.length - k >= 2 ? { ...m, closeCut: true } : m;
    }
    // `{…}, {…}` inside one block: several calls, read up to the closing tag (all or nothing)
    if (text[k] === ',') {
      const close = find(CLOSE, k);
      if (close < 0) {
        if (!final) return 'need-more';
        return finishMatch(callsFromJson(text.slice(j), defaultToCall, true), text.length, true);
      }
      return finishMatch(
        callsFromJson(text.slice(j, close), defaultToCall, false),
        close + CLOSE.length,
        false,
      );
    }
    // `{…}\n{…}` inside one block: several calls without commas (Qwen2.5 1.5B-7B writes its
    // parallel calls so), read up to the closing tag, all or nothing; a block cut off by the
    // end of output too. Another `<tool_call>` before the closing tag: each object is its own.
    if (text[k] === '{') {
      const close = find(CLOSE, k);
      const reopen = find(OPEN, k);
      if (close < 0 && reopen < 0) {
        if (!final) return 'need-more';
        // not all objects to the end: the first call ends at its object, as below
        const all = callsFromJson(text.slice(j), defaultToCall, true);
        if ('calls' in all) return finishMatch(all, text.length, true);
      }
      if (close >= 0 && (reopen < 0 || close < reopen)) {
        return finishMatch(
          callsFromJson(text.slice(j, close), defaultToCall, false),
          close + CLOSE.length,
          false,
        );
      }
    }
    // recall13: one `}` too many before the closing tag (`{…}}}\n</tool_call>`): the envelope
    // closes there, the brace goes with it (repair extra-brace); undecided while the tag may come
    if (text[k] === '}') {
      const t = skipWs(text, k + 1);
      if (text.startsWith(CLOSE, t)) {
        const r = readJson(text.slice(j, scan.end), false, ctx);
        if ('calls' in r) {
          for (const call of r.calls) call.repairs = [...(call.repairs ?? []), 'extra-brace'];
          return finishMatch(r, t + CLOSE.length, false);
        }
      } else if (!final && CLOSE.startsWith(text.slice(t, t + CLOSE.length))) return 'need-more';
    }
    // a closing tag mistyped (`</tool_calls>`, `</ tool_call>`, `</function>`) or the
    // opening tag written again where the closing one belongs, at the end of output
    const slip = closeSlip(text, k, final);
    if (slip === 'need-more') return 'need-more';
    if (slip > 0) {
      const r = readJson(text.slice(j, scan.end), false, ctx);
      // a tag one edit from the closing one (not a known slip) only for calls that fit
      const known = SLIPS.has(foldTag(text.slice(k + 2, slip - 1))) || text.startsWith(OPEN, k);
      if ('calls' in r && (known || slipGate(r.calls, ctx))) {
        for (const call of r.calls) call.repairs = [...(call.repairs ?? []), 'mismatched-close-tag'];
        return finishMatch(r, slip, false);
      }
      if (known) return finishMatch(r, slip, false);
    }
    // JSON complete but no closing tag (another call or prose follows): the call ends here
    const r = readJson(text.slice(j, scan.end), false, ctx);
    if ('calls' in r)
      for (const call of r.calls) call.repairs = [...(call.repairs ?? []), 'missing-close-tag'];
    return finishMatch(r, scan.end, false);
  }
  if (scan?.stoppedAt !== undefined) {
    const at = scan.stoppedAt;
    // the closing tag came before the JSON closed: a missing brace, repaired only right before the tag
    if (text.startsWith(CLOSE, at))
      return finishMatch(readJson(text.slice(j, at), true, ctx), at + CLOSE.length, false);
    return { end: at, calls: [], error: 'unterminated JSON before the next tool call' };
  }
  if (!final) return 'need-more';
  return finishMatch(readJson(text.slice(j), true, ctx), text.length, true);
}
