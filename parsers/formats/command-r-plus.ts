/**
 * Cohere Command R+ / Command R (llama.cpp "Command R+" tool_use template): the model writes
 * an `Action:` line and a fenced JSON list of `{"tool_name": …, "parameters": {…}}`:
 *   Action:
 *   ```json
 *   [{"tool_name": "NAME", "parameters": {…}}]
 *   ```
 * and answers after `<|CHATBOT_TOKEN|>` (a control token, removed).
 *
 * "Action:" is an English word, so the gate is strict: it must begin the output or a line, be
 * followed (after whitespace) by a ``` fence (language tag empty or json) holding one JSON list,
 * and that list must close the fence (only whitespace between). Every object must have exactly
 * the Cohere keys, and the safety rules still require declared tools. A fence never closed is
 * read only when the list is complete and nothing but whitespace follows to the end of output
 * (repair `unclosed-envelope`: servers often stop on the fence).
 *
 * recall15: the `Action:` line may be a Markdown list item (`- Action:`, `* Action:`; the bullet is
 * its own marker, since the family sees one code unit before a marker, and stays content), and a
 * byte-order mark may stand where the line starts.
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';
import { finishMatch } from '../kit/envelope.js';
import { expectLiteral, jsonFenceBody, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { callsFromJson, controlToken } from '../kit/long-tail.js';
import { cohereToCall } from './command-r7b.js';

const ACTION = 'Action:';
/** `Action:` as a list item: the bullet stays content when the call is read. */
const BULLETS = ['- ', '* '];
const BULLETED = BULLETS.map((b) => b + ACTION);
const CHATBOT = '<|CHATBOT_TOKEN|>';
const FENCE = '```';

function matchAction(input: MatchInput): MatchResult {
  const { text, start, final, marker } = input;
  // a line of its own: "Plan: …\nAction:" or the start of the output (a byte-order mark may come
  // first), never mid-sentence
  if (start > 0 && text[start - 1] !== '\n' && text[start - 1] !== '\uFEFF') return null;
  const bullet = marker.length - ACTION.length;
  const i = skipWs(text, start + marker.length);
  const j = jsonFenceBody(text, i, final);
  if (j === null || j === 'need-more') return j;
  if (text[j] !== '[') return null;
  // stopping at a fence keeps a list that never closes from being scanned to the end again
  const scan = scanJsonValue(text, j, { stopAt: [FENCE] });
  if (!scan || scan.stoppedAt !== undefined) return null;
  if (scan.end < 0) return final ? null : 'need-more';
  const k = skipWs(text, scan.end);
  let m: EnvelopeMatch;
  if (k >= text.length) {
    if (!final) return 'need-more';
    m = finishMatch(callsFromJson(text.slice(j, scan.end), cohereToCall, false), text.length, true);
  } else {
    const close = expectLiteral(text, k, FENCE, final);
    if (close === 'need-more') return 'need-more';
    if (close === 'no') return null;
    m = finishMatch(callsFromJson(text.slice(j, scan.end), cohereToCall, false), k + FENCE.length, false);
  }
  return bullet > 0 ? { ...m, content: text.slice(start, start + bullet).trimEnd() } : m;
}

export const commandRPlus = defineFamily({
  name: 'command-r-plus',
  markers: [ACTION, ...BULLETED, CHATBOT],
  priority: 43,
  backend: { llamacpp: 'Command R+' },
  match(input) {
    if (input.marker === CHATBOT) return controlToken(input.start, CHATBOT);
    return matchAction(input);
  },
});
