/**
 * Mistral, three generations of the same marker:
 *   [TOOL_CALLS][{"name": …, "arguments": …}, …]        (v3 tokenizers; JSON list or object)
 *   [TOOL_CALLS]NAME{…}                                  (v11, before [ARGS] existed)
 *   [TOOL_CALLS]NAME[ARGS]{…}, [TOOL_CALLS]NAME[CALL_ID]id[ARGS]{…}   (v13+)
 * One [TOOL_CALLS] segment is one envelope; several segments follow each other. Text between
 * the marker and a JSON call list ("[TOOL_CALLS] junk [{…}]") is part of the envelope when the
 * list really holds calls (vLLM's pre-v11 fallback reads it too).
 * Magistral / Ministral reasoning models think in [THINK]…[/THINK]: that section is reasoning,
 * so a [TOOL_CALLS] drafted inside it is not a call (llama.cpp test-chat.cpp, Ministral-3).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import { slipGate } from '../kit/close-slip.js';
import { callsFromJsonBody, decodeBody, finishMatch, peekNonWs } from '../kit/envelope.js';
import { expectLiteral, readName, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { matchReasoningSection } from '../kit/long-tail.js';
import type { ParseContext, ParsedCall } from '../types.js';

const MARK = '[TOOL_CALLS]';
const ARGS = '[ARGS]';
const CALL_ID = '[CALL_ID]';
const THINK = '[THINK]';
/** How far junk before the JSON list may reach: a short model hiccup, not a paragraph. */
const MAX_JUNK = 64;

/**
 * After a call object ending at `from`: where a run of `, {…}` objects after it ends (the index
 * after the last), null when no comma and object follow it (the object stands alone), or
 * 'need-more' while the next non-blank character, or an object after a comma, has not all arrived.
 * An object the end of output left open ends the run before it (the objects before it stand as
 * they did). One scan per object: linear in the run.
 */
function objectRun(text: string, from: number, final: boolean): number | null | 'need-more' {
  let end = -1;
  let k = from;
  for (;;) {
    const c = skipWs(text, k);
    if (c >= text.length) return final ? (end < 0 ? null : end) : 'need-more';
    if (text[c] !== ',') return end < 0 ? null : end;
    const o = skipWs(text, c + 1);
    if (o >= text.length) return final ? (end < 0 ? null : end) : 'need-more';
    if (text[o] !== '{') return end < 0 ? null : end;
    const scan = scanJsonValue(text, o, { stopAt: [MARK] });
    if (!scan || scan.end < 0) {
      if (!final && scan?.stoppedAt === undefined && scan !== null) return 'need-more';
      return end < 0 ? null : end;
    }
    end = scan.end;
    k = end;
  }
}

/**
 * Near miss (recall11, repair `unbracketed-list`): `[TOOL_CALLS]{…}, {…}`, several call objects
 * separated by commas with the list's brackets left out. Read as the list they spell, all or
 * nothing: every object a call naming a declared tool whose schema its arguments fit (the engine
 * gates the repair, SCHEMA_GATED); else the whole run stays text. (Before, the first call was read
 * and `, {…}` left in content.)
 */
function objectList(text: string, j: number, end: number): EnvelopeMatch {
  const r = callsFromJsonBody(`[${text.slice(j, end)}]`, false);
  if ('error' in r) return { end, calls: [], error: r.error };
  return { end, calls: r.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'unbracketed-list'] })) };
}

/**
 * `[{…}]` / `{…}` read as call objects from j; the envelope ends with the JSON. With `orRun` (right
 * after the marker), an object followed by `, {…}` objects is read as their run (objectRun).
 */
function jsonList(text: string, j: number, final: boolean, orRun = false): MatchResult {
  const scan = scanJsonValue(text, j, { stopAt: [MARK] });
  if (scan && scan.end > 0 && text[j] === '{' && orRun) {
    const run = objectRun(text, scan.end, final);
    if (run === 'need-more') return 'need-more';
    // the engine takes it only when every call fits its tool's schema (SCHEMA_GATED)
    if (run !== null) return objectList(text, j, run);
  }
  if (scan && scan.end > 0)
    return finishMatch(callsFromJsonBody(text.slice(j, scan.end), false), scan.end, false);
  if (scan?.stoppedAt !== undefined) return { end: scan.stoppedAt, calls: [], error: 'unterminated JSON' };
  if (!final) return 'need-more';
  return finishMatch(callsFromJsonBody(text.slice(j), true), text.length, true);
}

/** Junk then a JSON call list: accepted only when the list decodes to calls. */
function junkThenList(text: string, from: number, final: boolean): MatchResult {
  const limit = Math.min(text.length, from + MAX_JUNK);
  let j = from;
  while (j < limit && text[j] !== '[' && text[j] !== '{' && text[j] !== '\n') j++;
  if (j >= limit || text[j] === '\n') {
    if (j >= text.length && !final) return 'need-more';
    return { end: from, calls: [], error: 'no call after [TOOL_CALLS]' };
  }
  if (text.startsWith(MARK, j)) return { end: from, calls: [], error: 'no call after [TOOL_CALLS]' };
  const m = jsonList(text, j, final);
  if (m === 'need-more' || m === null) return m;
  if (m.error || m.calls.length === 0) return { end: from, calls: [], error: 'no call after [TOOL_CALLS]' };
  return m;
}

/** NAME[CALL_ID]id[ARGS]{…}, NAME[ARGS]{…} or NAME{…} from j. */
function namedCall(text: string, j: number, final: boolean): MatchResult {
  const name = readName(text, j);
  let k = j + name.length;
  if (k >= text.length) return final ? junkThenList(text, j, final) : 'need-more';
  let id: string | undefined;
  const cid = expectLiteral(text, k, CALL_ID, final);
  if (cid === 'need-more') return 'need-more';
  if (cid === 'yes') {
    const idStart = k + CALL_ID.length;
    id = readName(text, idStart);
    k = idStart + id.length;
    if (k >= text.length && !final) return 'need-more';
  }
  const a = expectLiteral(text, k, ARGS, final);
  if (a === 'need-more') return 'need-more';
  let b: number;
  if (a === 'yes') b = skipWs(text, k + ARGS.length);
  else if (id === undefined && text[k] === '{') b = k;
  else return id === undefined ? junkThenList(text, j, final) : { end: k, calls: [], error: 'no [ARGS]' };
  if (b >= text.length)
    return final ? { end: b, calls: [], error: 'truncated', truncated: true } : 'need-more';
  const scan = scanJsonValue(text, b, { stopAt: [MARK] });
  if (!scan) return { end: b, calls: [], error: 'arguments are not JSON' };
  let end: number;
  let truncated = false;
  if (scan.end > 0) end = scan.end;
  else if (scan.stoppedAt !== undefined)
    return { end: scan.stoppedAt, calls: [], error: 'unterminated JSON' };
  else if (!final) return 'need-more';
  else {
    end = text.length;
    truncated = true;
  }
  const d = decodeBody(text.slice(b, end), truncated);
  if (!d) return { end, calls: [], error: 'arguments are not JSON', ...(truncated ? { truncated } : {}) };
  return {
    end,
    calls: [
      {
        name,
        arguments: d.value,
        ...(id ? { id } : {}),
        ...(d.repairs.length ? { repairs: d.repairs } : {}),
      },
    ],
    ...(truncated ? { truncated } : {}),
  };
}

/**
 * Near miss (recall10, repair `missing-call-marker`): the whole output is v13 calls whose first
 * `[TOOL_CALLS]` is gone, `NAME[ARGS]{…}` (or `NAME[CALL_ID]id[ARGS]{…}`), further calls after
 * blanks or their own `[TOOL_CALLS]`. `[TOOL_CALLS]` is a special token a detokenizer that skips
 * them drops while `[ARGS]` comes through (ml-explore/mlx-lm#1448 shows the text left once the
 * marker is gone, `get_weather[ARGS]{…}[TOOL_CALLS]get_weather[ARGS]{…}`; unslothai/unsloth#5704
 * reads bare `name[ARGS]{…}` as a call). Held by the name frame `NAME[ARGS]` / `NAME[CALL_ID]`
 * (a declared name, exactly); read only when every call names a declared tool whose schema its
 * arguments fit and nothing but blanks follows the last one. Anything else stays text.
 */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  let i = skipWs(text, 0);
  const calls: ParsedCall[] = [];
  while (i < text.length) {
    const marked = calls.length > 0 && text.startsWith(MARK, i);
    if (marked) i = skipWs(text, i + MARK.length);
    const name = readName(text, i);
    if (!ctx.tools.has(name)) return null;
    let k = i + name.length;
    let id: string | undefined;
    if (text.startsWith(CALL_ID, k)) {
      id = readName(text, k + CALL_ID.length);
      if (id === '') return null;
      k += CALL_ID.length + id.length;
    }
    if (!text.startsWith(ARGS, k)) return null;
    const j = skipWs(text, k + ARGS.length);
    if (text[j] !== '{') return null;
    const scan = scanJsonValue(text, j, { stopAt: [MARK] });
    if (!scan || scan.end < 0) return null;
    const d = decodeBody(text.slice(j, scan.end), false);
    if (!d) return null;
    const repairs = marked ? d.repairs : ['missing-call-marker', ...d.repairs];
    calls.push({ name, arguments: d.value, ...(repairs.length ? { repairs } : {}), ...(id ? { id } : {}) });
    i = skipWs(text, scan.end);
  }
  return calls.length > 0 && slipGate(calls, ctx) ? { end: text.length, calls } : null;
}

export const mistral = defineFamily({
  name: 'mistral',
  markers: [MARK, THINK],
  priority: 10,
  backend: { vllm: 'mistral', llamacpp: 'Mistral Nemo', sglang: 'mistral' },
  wholeNameStarts: [{ before: '', after: [ARGS, CALL_ID] }],
  matchWhole,
  match(input): MatchResult {
    if (input.marker === THINK) return matchReasoningSection(input, '[/THINK]');
    const { text, start, marker, final } = input;
    const j = peekNonWs(text, start + marker.length, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return { end: text.length, calls: [], error: 'empty tool call', truncated: true };
    const c = text[j];
    if (c === '[' || c === '{') return jsonList(text, j, final, true);
    if (readName(text, j) === '') return junkThenList(text, j, final);
    return namedCall(text, j, final);
  },
});
