/**
 * Hermes / Qwen2.5: <tool_call>{"name": …, "arguments": …}</tool_call>, several in a row, the
 * last one possibly unclosed at end of output. <tool_call> is shared with GLM and Qwen3-Coder:
 * this family only claims it when a JSON object (or a ```json fence) follows. Several objects
 * separated by commas inside one block are several calls.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';
import { callsFromJsonBody, finishMatch, peekNonWs } from '../kit/envelope.js';
import { scanJsonValue, skipWs } from '../kit/json-scan.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

export const hermes = defineFamily({
  name: 'hermes',
  markers: [OPEN],
  priority: 20,
  backend: { vllm: 'hermes', llamacpp: 'Hermes 2 Pro', sglang: 'qwen25' },
  match({ text, start, marker, final, find }): MatchResult {
    const bodyStart = start + marker.length;
    const j = peekNonWs(text, bodyStart, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return { end: text.length, calls: [], error: 'empty envelope', truncated: true };
    const c = text[j];
    if (c === '`') {
      const close = find(CLOSE, j);
      if (close < 0) {
        if (!final) return 'need-more';
        return finishMatch(callsFromJsonBody(text.slice(j), true), text.length, true);
      }
      return finishMatch(callsFromJsonBody(text.slice(j, close), false), close + CLOSE.length, false);
    }
    if (c !== '{') return null;
    const scan = scanJsonValue(text, j, { stopAt: [CLOSE, OPEN] });
    if (scan && scan.end > 0) {
      const k = skipWs(text, scan.end);
      if (text.startsWith(CLOSE, k)) {
        return finishMatch(callsFromJsonBody(text.slice(j, scan.end), false), k + CLOSE.length, false);
      }
      if (k >= text.length || CLOSE.startsWith(text.slice(k))) {
        if (!final) return 'need-more';
        return finishMatch(callsFromJsonBody(text.slice(j, scan.end), false), text.length, true);
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
      // JSON complete but no closing tag (another call or prose follows): the call ends here
      const r = callsFromJsonBody(text.slice(j, scan.end), false);
      if ('calls' in r)
        for (const call of r.calls) call.repairs = [...(call.repairs ?? []), 'missing-close-tag'];
      return finishMatch(r, scan.end, false);
    }
    if (scan?.stoppedAt !== undefined) {
      const at = scan.stoppedAt;
      // the closing tag came before the JSON closed: a missing brace, repaired only right before the tag
      if (text.startsWith(CLOSE, at))
        return finishMatch(callsFromJsonBody(text.slice(j, at), true), at + CLOSE.length, false);
      return { end: at, calls: [], error: 'unterminated JSON before the next tool call' };
    }
    if (!final) return 'need-more';
    return finishMatch(callsFromJsonBody(text.slice(j), true), text.length, true);
  },
});
