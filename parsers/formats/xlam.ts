/**
 * Salesforce xLAM (vLLM `xlam`): a JSON list of `{"name": …, "arguments": …}`. The whole-output
 * forms (a bare list, a list in a code fence, `[TOOL_CALLS][…]`, `<tool_call>[…]</tool_call>`)
 * are already read by the json, mistral and granite families; this one adds the form they
 * cannot see: a ```json fence holding a call list AFTER some text ("Sure.\n```json\n[…]\n```").
 * Only a list of exact call objects is claimed, never a fenced object or other JSON, and only
 * when the fence ENDS the output: text after the fence means the list was an example inside an
 * explanation (the json family's precision-first rule), and an example is not a call.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';
import { delimitedEnvelope, peekNonWs } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';

const fence = delimitedEnvelope({
  end: '```',
  // a fence left open is a code sample cut off, not a call list
  allowUnclosed: false,
  accept(text, bodyStart, final) {
    if (bodyStart < text.length && text[bodyStart] !== '\n' && text[bodyStart] !== '\r') return 'no';
    const j = peekNonWs(text, bodyStart, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end' || text[j] !== '[') return 'no';
    const k = peekNonWs(text, j + 1, final);
    if (k === 'need-more') return 'need-more';
    return k !== 'end' && text[k] === '{' ? 'yes' : 'no';
  },
  parseBody: (body) => callsFromJson(body, defaultToCall, false),
});

export const xlam = defineFamily({
  name: 'xlam',
  markers: ['```json'],
  priority: 60,
  backend: { vllm: 'xlam' },
  match(input: MatchInput): MatchResult {
    const m = fence(input);
    if (m === null || m === 'need-more') return m;
    // a fenced list that is not calls is a JSON sample in prose: not a leak at all
    if (m.error !== undefined) return null;
    const after = skipWs(input.text, m.end);
    if (after < input.text.length) return null;
    return input.final ? m : 'need-more';
  },
});
