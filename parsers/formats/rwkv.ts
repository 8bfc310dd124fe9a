/**
 * RWKV (vLLM `rwkv`): a Markdown heading line, then one fenced JSON call object:
 *   **Tool Call:**
 *   ```json
 *   {"name": "NAME", "arguments": {…}}
 *   ```
 * Several calls are several such blocks. The heading is the marker; the gate is strict: a
 * ``` fence (language tag empty or json) must follow it, holding one complete JSON object
 * and nothing else before the closing fence. A fence never closed is read only when the
 * object is complete and nothing but whitespace follows to the end of output (repair
 * `unclosed-envelope`). A heading with an unreadable object under it stays text.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { finishMatch } from '../kit/envelope.js';
import { expectLiteral, jsonFenceBody, scanJsonValue, skipWs } from '../kit/json-scan.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';

const HEADING = '**Tool Call:**';
const FENCE = '```';

function matchToolCall({ text, start, final }: MatchInput): MatchResult {
  const i = skipWs(text, start + HEADING.length);
  const j = jsonFenceBody(text, i, final);
  if (j === null || j === 'need-more') return j;
  if (text[j] !== '{') return null;
  // stopping at a fence keeps an object that never closes from being scanned to the end again
  const scan = scanJsonValue(text, j, { stopAt: [FENCE] });
  if (!scan) return null;
  if (scan.stoppedAt !== undefined) {
    // the fence closed on an unfinished object: the block is this format's, but unreadable
    const closeAt = scan.stoppedAt;
    return { end: closeAt + FENCE.length, calls: [], error: 'call object not closed before the fence' };
  }
  if (scan.end < 0) {
    if (!final) return 'need-more';
    return { end: text.length, calls: [], error: 'call cut off', truncated: true };
  }
  const body = text.slice(j, scan.end);
  const k = skipWs(text, scan.end);
  if (k >= text.length) {
    if (!final) return 'need-more';
    return finishMatch(callsFromJson(body, defaultToCall, false), text.length, true);
  }
  const close = expectLiteral(text, k, FENCE, final);
  if (close === 'need-more') return 'need-more';
  if (close === 'no') return { end: k, calls: [], error: 'text after the call object' };
  return finishMatch(callsFromJson(body, defaultToCall, false), k + FENCE.length, false);
}

export const rwkv = defineFamily({
  name: 'rwkv',
  markers: [HEADING],
  priority: 43,
  backend: { vllm: 'rwkv' },
  match: matchToolCall,
});
