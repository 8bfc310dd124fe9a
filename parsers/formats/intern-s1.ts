/**
 * Intern-S1 (vLLM `intern-s1`): InternLM2's action block, but the model may put whitespace
 * between its two opening special tokens:
 *   text<|action_start|> <|plugin|>\n{"name": …, "parameters": {…}}\n<|action_end|>
 * The block written without that whitespace is InternLM2's (`internlm2.ts`, whose longer marker
 * the scanner tries first); this family claims only the spaced spelling, so the two never
 * read the same block.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { closedEnvelope, startsWith } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import { callsFromJson, defaultToCall } from '../kit/long-tail.js';

const ACTION_START = '<|action_start|>';
const PLUGIN = '<|plugin|>';
const ACTION_END = '<|action_end|>';

const block = closedEnvelope({
  open: ACTION_START,
  end: ACTION_END,
  accept: startsWith('{'),
  read: (body, _ctx, { truncated }) => callsFromJson(body, defaultToCall, truncated),
});

export const internS1 = defineFamily({
  name: 'intern-s1',
  markers: [ACTION_START],
  priority: 45,
  backend: { vllm: 'intern-s1' },
  match(input): MatchResult {
    const { text, start, marker, final } = input;
    const afterStart = start + marker.length;
    const j = skipWs(text, afterStart);
    if (j === text.length) return final ? null : 'need-more';
    // no whitespace: InternLM2's block (or not a block at all)
    if (j === afterStart) return null;
    if (!text.startsWith(PLUGIN, j)) {
      if (!final && text.length - j < PLUGIN.length && PLUGIN.startsWith(text.slice(j))) return 'need-more';
      return null;
    }
    // read from <|plugin|> on; the envelope still starts at <|action_start|> (match.end is absolute)
    return block({ ...input, start: j, marker: PLUGIN });
  },
});
