/**
 * DeepSeek V3 / R1 and V3.1 (full-width bars U+FF5C, U+2581 in the special tokens):
 *   V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
 *   V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
 * The section is one envelope (all or nothing); a lone call block is its own envelope.
 * <｜end▁of▁sentence｜> is a control token, removed.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import type { ParsedCall } from '../types.js';
import { decodeBody, sectionOrLoneCall } from '../kit/envelope.js';

const SECTION_OPEN = '<｜tool▁calls▁begin｜>';
const SECTION_CLOSE = '<｜tool▁calls▁end｜>';
const CALL_OPEN = '<｜tool▁call▁begin｜>';
const CALL_CLOSE = '<｜tool▁call▁end｜>';
const SEP = '<｜tool▁sep｜>';
const EOS = '<｜end▁of▁sentence｜>';

function parseOne(head: string, rest: string, truncated: boolean): ParsedCall | { error: string } {
  const h = head.trim();
  if (h === 'function') {
    // V3: NAME on the line after the separator, then fenced JSON
    const nl = rest.indexOf('\n');
    if (nl < 0) return { error: 'no newline after function name' };
    const name = rest.slice(0, nl).trim();
    const d = decodeBody(rest.slice(nl + 1), truncated);
    if (!d || name === '') return { error: 'arguments are not JSON' };
    return { name, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) };
  }
  if (h === '' || /\s/.test(h)) return { error: 'bad function name' };
  const d = decodeBody(rest, truncated);
  if (!d) return { error: 'arguments are not JSON' };
  return { name: h, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) };
}

const V31_HINT = 'vllm --tool-call-parser deepseek_v31';

const envelope = sectionOrLoneCall({
  sectionOpen: SECTION_OPEN,
  sectionClose: SECTION_CLOSE,
  callOpen: CALL_OPEN,
  callClose: CALL_CLOSE,
  sep: SEP,
  noSep: 'no tool separator',
  readCall: parseOne,
});

export const deepseek = defineFamily({
  name: 'deepseek',
  markers: [SECTION_OPEN, CALL_OPEN, EOS],
  priority: 10,
  backend: { vllm: 'deepseek_v3', llamacpp: 'DeepSeek V3.1', sglang: 'deepseekv3' },
  match(input): MatchResult {
    if (input.marker === EOS) return { end: input.start + EOS.length, calls: [], control: true };
    const m = envelope(input);
    // V3 writes `function<｜tool▁sep｜>NAME`; V3.1 writes `NAME<｜tool▁sep｜>` (its own vLLM parser)
    if (m && m !== 'need-more') {
      const head = input.text.slice(input.start, Math.min(m.end, input.start + 256));
      if (!head.includes(`${CALL_OPEN}function${SEP}`)) return { ...m, backendHint: V31_HINT };
    }
    return m;
  },
});
