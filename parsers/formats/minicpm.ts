/**
 * MiniCPM 5 XML (vLLM `minicpm5`): bare `<function name="NAME"><param name="P">value</param>…</function>`
 * blocks, no wrapper. Values may be CDATA-wrapped (`<![CDATA[…]]>`, multi-line text) and are
 * typed by the declared schema. A CDATA section is opaque: it may hold `</param>` or
 * `</function>` (llama.cpp ends such a value at `]]>`), so neither ends the value or the block
 * inside it. A block left open at the end of output stays text. Detokenizers sometimes leave
 * the byte-level space marker in the tags or drop the space (`<function\u0120name="`,
 * `<functionname="`, `<paramname="`, as vLLM's tests show): such a block is read with its
 * tags normalised. Arguments wrapped in one undeclared `properties` / `arguments` parameter
 * are unwrapped when every key inside is declared.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { skipWs } from '../kit/json-scan.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { finishMatch } from '../kit/envelope.js';
import { unwrapArgumentsKey } from '../kit/schema-values.js';

const OPEN = '<function name="';
/** The same opening tag as detokenized with a byte-level space marker, or with no space. */
const OPEN_VARIANTS = ['<function\u0120name="', '<functionname="'];
const TAG_VARIANT = /<(function|param)\u0120?name="/g;
const CLOSE = '</function>';
const PARAM_CLOSE = '</param>';
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
  argClose: PARAM_CLOSE,
  findValueEnd(body, from) {
    const j = skipWs(body, from);
    if (!body.startsWith(CDATA_OPEN, j)) return body.indexOf(PARAM_CLOSE, from);
    const k = body.indexOf(CDATA_CLOSE, j + CDATA_OPEN.length);
    return k < 0 ? -1 : body.indexOf(PARAM_CLOSE, k + CDATA_CLOSE.length);
  },
  finishArgs: unwrapArgumentsKey,
  unwrapValue(raw) {
    const t = raw.trim();
    return t.startsWith(CDATA_OPEN) && t.endsWith(CDATA_CLOSE)
      ? t.slice(CDATA_OPEN.length, t.length - CDATA_CLOSE.length)
      : raw;
  },
};

/**
 * The block's `</function>`, skipping CDATA sections. Both searches go through the memoised
 * `find`, and each step moves past what it found, so the scan stays one pass.
 */
function blockClose(find: (literal: string, from: number) => number, from: number): number {
  let i = from;
  for (;;) {
    const close = find(CLOSE, i);
    const cdata = find(CDATA_OPEN, i);
    if (cdata < 0 || close < 0 || close < cdata) return close;
    const end = find(CDATA_CLOSE, cdata + CDATA_OPEN.length);
    if (end < 0) return -1;
    i = end + CDATA_CLOSE.length;
  }
}

export const minicpm = defineFamily({
  name: 'minicpm',
  markers: [OPEN, ...OPEN_VARIANTS],
  priority: 44,
  backend: { vllm: 'minicpm5' },
  match({ text, start, marker, final, ctx, find }): MatchResult {
    const close = blockClose(find, start);
    if (close < 0) {
      if (!final) return 'need-more';
      return finishMatch({ error: 'unclosed function block' }, text.length, true);
    }
    const end = close + CLOSE.length;
    const block = text.slice(start, end);
    const tags = marker === OPEN ? block : block.replace(TAG_VARIANT, (_, tag: string) => `<${tag} name="`);
    return finishMatch(readXmlCalls(tags, CALLS, ctx), end, false);
  },
});
