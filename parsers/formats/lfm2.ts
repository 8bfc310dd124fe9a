/**
 * Liquid LFM2 / LFM2.5 (vLLM `lfm2`): `<|tool_call_start|>[get_weather(city="Paris"), now()]<|tool_call_end|>`,
 * Python call syntax inside the special tokens (a JSON list of call objects, or one JSON call
 * object, is read too). The
 * end token is often missing at the end of output; the list's end then ends the envelope.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';
import { finishMatch, peekNonWs } from '../kit/envelope.js';
import { expectLiteral, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { parsePythonCallList } from '../kit/python-literal.js';

const OPEN = '<|tool_call_start|>';
const CLOSE = '<|tool_call_end|>';

function readList(list: string): { calls: { name: string; arguments: unknown }[] } | { error: string } {
  const j = skipWs(list, 1);
  if (list[j] === '{') return callsFromJson(list, defaultToCall, false);
  const calls = parsePythonCallList(list);
  return calls ? { calls } : { error: 'not a list of calls' };
}

/** `<|tool_call_start|>{"name": …, "arguments": …}<|tool_call_end|>`: one JSON call object. */
function jsonObject(text: string, j: number, final: boolean): MatchResult {
  const scan = scanJsonValue(text, j, { stopAt: [CLOSE, OPEN] });
  if (!scan || scan.end < 0) {
    if (scan?.stoppedAt === undefined && !final) return 'need-more';
    if (scan?.stoppedAt !== undefined && text.startsWith(CLOSE, scan.stoppedAt))
      return finishMatch(
        callsFromJson(text.slice(j, scan.stoppedAt), defaultToCall, true),
        scan.stoppedAt + CLOSE.length,
        false,
      );
    return finishMatch(
      { error: 'unclosed call object' },
      scan?.stoppedAt ?? text.length,
      scan?.stoppedAt === undefined,
    );
  }
  const k = skipWs(text, scan.end);
  if (k >= text.length && !final) return 'need-more';
  const lit = expectLiteral(text, k, CLOSE, final);
  if (lit === 'need-more') return 'need-more';
  const end = lit === 'yes' ? k + CLOSE.length : scan.end;
  return finishMatch(callsFromJson(text.slice(j, scan.end), defaultToCall, false), end, false);
}

export const lfm2 = defineFamily({
  name: 'lfm2',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'lfm2', llamacpp: 'LFM2' },
  match({ text, start, final }): MatchResult {
    const j = peekNonWs(text, start + OPEN.length, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return { end: text.length, calls: [], error: 'empty envelope', truncated: true };
    if (text[j] === '{') return jsonObject(text, j, final);
    if (text[j] !== '[') return null;
    // Python strings may use single quotes, and '(' nests like a bracket
    // stopping at the next start token too keeps many unclosed lists linear
    const scan = scanJsonValue(text, j, { singleQuotes: true, stopAt: [CLOSE, OPEN] });
    if (scan?.stoppedAt !== undefined && text.startsWith(OPEN, scan.stoppedAt)) {
      return finishMatch({ error: 'cut off by the next call list' }, scan.stoppedAt, false);
    }
    if (!scan || scan.end < 0) {
      if (scan?.stoppedAt === undefined && !final) return 'need-more';
      const to = scan?.stoppedAt ?? text.length;
      const end = scan?.stoppedAt !== undefined ? to + CLOSE.length : text.length;
      return finishMatch({ error: 'unclosed call list' }, end, scan?.stoppedAt === undefined);
    }
    const k = skipWs(text, scan.end);
    if (k >= text.length && !final) return 'need-more';
    const lit = expectLiteral(text, k, CLOSE, final);
    if (lit === 'need-more') return 'need-more';
    const end = lit === 'yes' ? k + CLOSE.length : scan.end;
    return finishMatch(readList(text.slice(j, scan.end)), end, false);
  },
});
