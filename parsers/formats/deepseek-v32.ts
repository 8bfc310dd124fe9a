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
import { slipGate } from '../kit/close-slip.js';

const OPEN = '<｜DSML｜function_calls>';
const OPEN_V4 = '<｜DSML｜tool_calls>';

/**
 * The same tags with the bar spelled otherwise, as DeepSeek's output reaches clients whose
 * tokenizer or gateway renders the special token differently: `｜｜` (two U+FF5C) and `‖`
 * (U+2016) seen leaking into content (lsdefine/GenericAgent#804, adolfousier/opencrabs#419),
 * ASCII `|` (the third spelling GenericAgent#804 lists). One bar throughout the block; read
 * only when every call names a declared tool whose schema its arguments fit (repair `dsml-bar`).
 */
const OTHER_BARS = ['｜｜', '‖', '|'];

/**
 * The invoke / parameter reader for one tag namespace (`DSML`; GigaChat 3.5 writes the same
 * body as `GCML`, see gigachat35.ts).
 */
export function dsmlCalls(ns: string, bar = '｜'): XmlCallSpec {
  return dsmlTagCalls(`${bar}${ns}${bar}`);
}

/** The same reader for tags spelled `<TAGinvoke …>`, `</TAGparameter>` (TAG: `｜DSML｜`, `｜｜DSML｜｜ `…). */
function dsmlTagCalls(tag: string): XmlCallSpec {
  return {
    callOpen: `<${tag}invoke name="`,
    callNameEnd: '"',
    callHeadEnd: '>',
    callClose: `</${tag}invoke>`,
    argOpen: `<${tag}parameter name="`,
    argNameEnd: '"',
    argHeadEnd: '>',
    argClose: `</${tag}parameter>`,
    valueMode: (attrs) => (attrs.includes('string="false"') ? 'schema-json' : 'schema'),
    jsonArgs: true,
    finishArgs: unwrapArgumentsKey,
  };
}

const CALLS = dsmlCalls('DSML');

/**
 * A block the output ended in with its last invoke left open right after a closed parameter
 * (`…</｜DSML｜parameter>\n` and nothing more: the generator's `missing-close`, the 4 misses
 * recall9 left): the model stopped where both closing tags belong, so the invoke is closed there
 * (the engine adds `unclosed-envelope`; an output the token limit cut stays text, engine.ts). Taken
 * only when every call names a declared tool whose schema its arguments fit (a stop before a
 * required parameter is no finished call). A value left open, or text after the last parameter,
 * is no such block. One lastIndexOf and one indexOf: linear.
 */
function closeLastInvoke(body: string, spec: XmlCallSpec): string | null {
  const t = body.trimEnd();
  if (!t.endsWith(spec.argClose)) return null;
  const last = t.lastIndexOf(spec.callOpen);
  if (last < 0 || t.indexOf(spec.callClose, last) >= 0) return null;
  return t + spec.callClose;
}

const read: BodyReader = (b, ctx, info) => {
  const closed = info.truncated ? closeLastInvoke(b, CALLS) : null;
  if (closed === null) return readXmlCalls(b, CALLS, ctx);
  const r = readXmlCalls(closed, CALLS, ctx);
  if ('error' in r) return r;
  return slipGate(r.calls, ctx) ? r : { error: 'DSML invoke left open: arguments do not fit' };
};
const v32 = closedEnvelope({ open: [OPEN, OPEN_V4], end: '</｜DSML｜function_calls>', read });
const v4 = closedEnvelope({ open: [OPEN, OPEN_V4], end: '</｜DSML｜tool_calls>', read });
const V4_HINT = 'vllm --tool-call-parser deepseek_v4';

/** A spelling of the tags other than DeepSeek's own, read behind the schema gate. */
interface Spelling {
  /** What stands between `<` (or `</`) and each tag's name. */
  tag: string;
  /** Each block: the name its opener spells, the name its closer spells. */
  blocks: readonly (readonly [string, string])[];
  repair: string;
}

const SPELLINGS: readonly Spelling[] = [
  ...OTHER_BARS.map((bar) => ({
    tag: `${bar}DSML${bar}`,
    blocks: [
      ['function_calls', 'function_calls'],
      ['tool_calls', 'tool_calls'],
    ] as const,
    repair: 'dsml-bar',
  })),
  // two bars and a blank before every tag name, the block named `calls` (DeepSeek V4.1 Flash in
  // CommandCodeAI/command-code#909, and cline/cline#14057): `<｜｜DSML｜｜ calls>`,
  // `<｜｜DSML｜｜ invoke name="…">`, `</｜｜DSML｜｜ parameter>`
  {
    tag: '｜｜DSML｜｜ ',
    blocks: [
      ['calls', 'calls'],
      ['function_calls', 'function_calls'],
      ['tool_calls', 'tool_calls'],
    ],
    repair: 'dsml-bar',
  },
  // the opener's block name without its underscore, the closer kept it
  // (DeepSeek-V4-Flash-0731, vllm-project/vllm#51914): `<｜DSML｜toolcalls>` … `</｜DSML｜tool_calls>`
  { tag: '｜DSML｜', blocks: [['toolcalls', 'tool_calls']], repair: 'dsml-block-name' },
];

/** Per spelling and block: its opener and the envelope it opens, read behind the schema gate. */
const VARIANTS = new Map(
  SPELLINGS.flatMap(({ tag, blocks, repair }) => {
    const calls = dsmlTagCalls(tag);
    const gatedRead: BodyReader = (b, ctx, info) => {
      const r = readXmlCalls(b, calls, ctx);
      if ('error' in r) return r;
      if (!slipGate(r.calls, ctx))
        return { error: `DSML spelled otherwise (${repair}): arguments do not fit` };
      for (const c of r.calls) c.repairs = [...(c.repairs ?? []), repair];
      return info.truncated ? { error: `DSML spelled otherwise (${repair}) left open` } : r;
    };
    return blocks.map(([open, close]) => {
      const o = `<${tag}${open}>`;
      return [o, closedEnvelope({ open: o, end: `</${tag}${close}>`, read: gatedRead })] as const;
    });
  }),
);

export const deepseekV32 = defineFamily({
  name: 'deepseek-v32',
  markers: [OPEN, OPEN_V4, ...VARIANTS.keys()],
  priority: 40,
  backend: { vllm: 'deepseek_v32', llamacpp: 'DeepSeek V3.2', sglang: 'deepseekv32' },
  match(input): MatchResult {
    if (input.marker === OPEN) return v32(input);
    const variant = VARIANTS.get(input.marker);
    if (variant) return variant(input);
    const m = v4(input);
    return m && m !== 'need-more' ? { ...m, backendHint: V4_HINT } : m;
  },
});
