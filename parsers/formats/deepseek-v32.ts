/**
 * DeepSeek "DSML", V3.2 (vLLM `deepseek_v32`) and V4 (`deepseek_v4`, same body in a
 * `tool_calls` block instead of `function_calls`):
 *   <｜DSML｜function_calls>
 *   <｜DSML｜invoke name="NAME">
 *   <｜DSML｜parameter name="P" string="true">raw text</｜DSML｜parameter>
 *   <｜DSML｜parameter name="Q" string="false">{"json": 1}</｜DSML｜parameter>
 *   </｜DSML｜invoke>
 *   </｜DSML｜function_calls>
 * (`｜` is U+FF5C.) Values are typed by the declared schema either way, so a declared string
 * stays byte for byte (string="false" `null` for a string parameter is the text "null");
 * an undeclared string="false" value is JSON. A lone `arguments`/`input` wrapper around the
 * real parameters is unwrapped (kit/schema-values.ts). An invoke may also hold one JSON object
 * instead of parameter tags.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { type BodyReader, closedEnvelope } from '../kit/envelope.js';
import { unwrapArgumentsKey } from '../kit/schema-values.js';

const OPEN = '<｜DSML｜function_calls>';
const OPEN_V4 = '<｜DSML｜tool_calls>';

/**
 * The invoke / parameter reader for one tag namespace (`DSML`; GigaChat 3.5 writes the same
 * body as `GCML`, see gigachat35.ts).
 */
export function dsmlCalls(ns: string): XmlCallSpec {
  return {
    callOpen: `<｜${ns}｜invoke name="`,
    callNameEnd: '"',
    callHeadEnd: '>',
    callClose: `</｜${ns}｜invoke>`,
    argOpen: `<｜${ns}｜parameter name="`,
    argNameEnd: '"',
    argHeadEnd: '>',
    argClose: `</｜${ns}｜parameter>`,
    valueMode: (attrs) => (attrs.includes('string="false"') ? 'schema-json' : 'schema'),
    jsonArgs: true,
    finishArgs: unwrapArgumentsKey,
  };
}

const CALLS = dsmlCalls('DSML');

const read: BodyReader = (b, ctx) => readXmlCalls(b, CALLS, ctx);
const v32 = closedEnvelope({ open: [OPEN, OPEN_V4], end: '</｜DSML｜function_calls>', read });
const v4 = closedEnvelope({ open: [OPEN, OPEN_V4], end: '</｜DSML｜tool_calls>', read });
const V4_HINT = 'vllm --tool-call-parser deepseek_v4';

export const deepseekV32 = defineFamily({
  name: 'deepseek-v32',
  markers: [OPEN, OPEN_V4],
  priority: 40,
  backend: { vllm: 'deepseek_v32', llamacpp: 'DeepSeek V3.2', sglang: 'deepseekv32' },
  match(input): MatchResult {
    if (input.marker === OPEN) return v32(input);
    const m = v4(input);
    return m && m !== 'need-more' ? { ...m, backendHint: V4_HINT } : m;
  },
});
