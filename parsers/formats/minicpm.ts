/**
 * MiniCPM 5 XML (vLLM `minicpm5`): bare `<function name="NAME"><param name="P">value</param>…</function>`
 * blocks, no wrapper. Values may be CDATA-wrapped (`<![CDATA[…]]>`, multi-line text) and are
 * typed by the declared schema. A block left open at the end of output stays text.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { finishMatch } from '../kit/envelope.js';

const OPEN = '<function name="';
const CLOSE = '</function>';
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';

const CALLS: XmlCallSpec = {
  callOpen: OPEN,
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: CLOSE,
  argOpen: '<param name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</param>',
  unwrapValue(raw) {
    const t = raw.trim();
    return t.startsWith(CDATA_OPEN) && t.endsWith(CDATA_CLOSE)
      ? t.slice(CDATA_OPEN.length, t.length - CDATA_CLOSE.length)
      : raw;
  },
};

export const minicpm = defineFamily({
  name: 'minicpm',
  markers: [OPEN],
  priority: 44,
  backend: { vllm: 'minicpm5' },
  match({ text, start, final, ctx, find }): MatchResult {
    const close = find(CLOSE, start);
    if (close < 0) {
      if (!final) return 'need-more';
      return finishMatch({ error: 'unclosed function block' }, text.length, true);
    }
    const end = close + CLOSE.length;
    return finishMatch(readXmlCalls(text.slice(start, end), CALLS, ctx), end, false);
  },
});
