/**
 * DeepSeek V3 / R1 and V3.1 (full-width bars U+FF5C, U+2581 in the special tokens):
 *   V3:   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
 *   V3.1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
 * The section is one envelope (all or nothing); a lone call block is its own envelope.
 * <｜end▁of▁sentence｜> is a control token, removed. The same tokens spelled with ASCII bars
 * (`<|tool▁calls▁begin|>`, as a chat template with that spelling shows them to the model;
 * ollama/ollama tools/tools_test.go::TestParser[deepseek]) are read the same way.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import type { ParsedCall } from '../types.js';
import { decodeBody, sectionOrLoneCall } from '../kit/envelope.js';

/** The special tokens with the bar they are spelled with (full-width U+FF5C, or ASCII). */
function tokens(bar: string) {
  const t = (name: string) => `<${bar}${name}${bar}>`;
  return {
    sectionOpen: t('tool▁calls▁begin'),
    sectionClose: t('tool▁calls▁end'),
    callOpen: t('tool▁call▁begin'),
    callClose: t('tool▁call▁end'),
    sep: t('tool▁sep'),
    eos: t('end▁of▁sentence'),
  };
}
const FULL = tokens('｜');
const ASCII = tokens('|');

/**
 * V3.1: `rest` ends at <｜tool▁call▁end｜> or at the end of output (cut off): either way a last
 * `}` missing is missing right before an end (missing-brace; the engine takes it before a marker
 * only for arguments that fit the schema). V3's fenced JSON missing it before the fence's close
 * stays unread unless cut off (vLLM's test_malformed_input refuses it too).
 */
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
  const d = decodeBody(rest, true);
  if (!d) return { error: 'arguments are not JSON' };
  return { name: h, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) };
}

const V31_HINT = 'vllm --tool-call-parser deepseek_v31';

const envelopeFor = (k: typeof FULL) =>
  sectionOrLoneCall({ ...k, noSep: 'no tool separator', readCall: parseOne });
const ENVELOPES = [
  { k: FULL, read: envelopeFor(FULL) },
  { k: ASCII, read: envelopeFor(ASCII) },
];

export const deepseek = defineFamily({
  name: 'deepseek',
  markers: [FULL.sectionOpen, FULL.callOpen, FULL.eos, ASCII.sectionOpen, ASCII.callOpen, ASCII.eos],
  priority: 10,
  backend: { vllm: 'deepseek_v3', llamacpp: 'DeepSeek V3.1', sglang: 'deepseekv3' },
  match(input): MatchResult {
    const { k, read } = input.marker.startsWith('<|') ? ENVELOPES[1]! : ENVELOPES[0]!;
    if (input.marker === k.eos) return { end: input.start + k.eos.length, calls: [], control: true };
    const m = read(input);
    // V3 writes `function<｜tool▁sep｜>NAME`; V3.1 writes `NAME<｜tool▁sep｜>` (its own vLLM parser)
    if (m && m !== 'need-more') {
      const head = input.text.slice(input.start, Math.min(m.end, input.start + 256));
      if (!head.includes(`${k.callOpen}function${k.sep}`)) return { ...m, backendHint: V31_HINT };
    }
    return m;
  },
});
