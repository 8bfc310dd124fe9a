/**
 * Mistral: [TOOL_CALLS][{"name": …, "arguments": …}, …] (older tokenizers) and
 * [TOOL_CALLS]NAME[ARGS]{…} (newer), optionally [TOOL_CALLS]NAME[CALL_ID]id[ARGS]{…}.
 * One [TOOL_CALLS] segment is one envelope; several segments follow each other.
 */
import { defineFamily } from './define.js';
import type { MatchResult } from './family.js';
import { callsFromJsonBody, decodeBody, finishMatch, peekNonWs } from './util/envelope.js';
import { expectLiteral, readName, scanJsonValue, skipWs } from './util/json-scan.js';

const MARK = '[TOOL_CALLS]';
const ARGS = '[ARGS]';
const CALL_ID = '[CALL_ID]';

export const mistral = defineFamily({
  name: 'mistral',
  markers: [MARK],
  priority: 10,
  backend: { vllm: 'mistral', llamacpp: 'Mistral Nemo', sglang: 'mistral' },
  match({ text, start, marker, final }): MatchResult {
    const j = peekNonWs(text, start + marker.length, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return { end: text.length, calls: [], error: 'empty tool call', truncated: true };
    const c = text[j];
    if (c === '[' || c === '{') {
      const scan = scanJsonValue(text, j, { stopAt: [MARK] });
      if (scan && scan.end > 0)
        return finishMatch(callsFromJsonBody(text.slice(j, scan.end), false), scan.end, false);
      if (scan?.stoppedAt !== undefined)
        return { end: scan.stoppedAt, calls: [], error: 'unterminated JSON' };
      if (!final) return 'need-more';
      return finishMatch(callsFromJsonBody(text.slice(j), true), text.length, true);
    }
    const name = readName(text, j);
    if (name === '') return { end: j, calls: [], error: 'no function name' };
    let k = j + name.length;
    if (k >= text.length)
      return final ? { end: k, calls: [], error: 'truncated', truncated: true } : 'need-more';
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
    if (a === 'no') return { end: k, calls: [], error: 'no [ARGS] after function name' };
    const b = skipWs(text, k + ARGS.length);
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
  },
});
