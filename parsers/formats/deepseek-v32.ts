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
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import { skipWs } from '../kit/json-scan.js';
import type { ParseContext } from '../types.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { type BodyReader, closedEnvelope } from '../kit/envelope.js';
import { unwrapArgumentsKey } from '../kit/schema-values.js';
import { slipGate } from '../kit/close-slip.js';

const OPEN = '<｜DSML｜function_calls>';
const OPEN_V4 = '<｜DSML｜tool_calls>';

/*
 * The same tags with the bar spelled otherwise, as DeepSeek's output reaches clients whose
 * tokenizer or gateway renders the special token differently: `｜｜` (two U+FF5C) and `‖`
 * (U+2016) seen leaking into content (lsdefine/GenericAgent#804, adolfousier/opencrabs#419),
 * ASCII `|` (the third spelling GenericAgent#804 lists), and blanks around them (`dsmlTags`).
 * Read only when every call names a declared tool whose schema its arguments fit (repair
 * `dsml-bar`).
 */

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

/** The block names a variant's opener may spell (its closer spells the same). */
const BLOCKS = [
  ['function_calls', 'function_calls'],
  ['tool_calls', 'tool_calls'],
  ['calls', 'calls'],
] as const;

/**
 * The bar and blank spellings of the `｜DSML｜` tag prefix other than DeepSeek's own, each with
 * every block name above: the bar once or twice in fullwidth (U+FF5C), `‖` (U+2016) or ASCII `|`,
 * with no blank, a blank after the prefix (`<｜｜DSML｜｜ calls>`, DeepSeek V4.1 Flash in
 * CommandCodeAI/command-code#909 and cline/cline#14057), or a blank on each side of each bar
 * (`< | DSML | tool_calls>` … `</ | DSML | invoke>`, what proxies and chat front ends that transcode
 * the special token pass on: AgentFlocks/flocks#687, NousResearch/hermes-agent#15453). One spelling
 * throughout the block (opener, invokes, parameters and closers).
 */
export function dsmlTags(): string[] {
  const out: string[] = [];
  for (const bar of ['｜', '｜｜', '‖', '|']) {
    for (const tag of [`${bar}DSML${bar}`, `${bar}DSML${bar} `, ` ${bar} DSML ${bar} `]) {
      if (tag !== '｜DSML｜') out.push(tag);
    }
  }
  return out;
}

const SPELLINGS: readonly Spelling[] = [
  ...dsmlTags().map((tag) => ({ tag, blocks: BLOCKS, repair: 'dsml-bar' })),
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

/** Every tag prefix read: DeepSeek's own, then the other spellings. */
const ALL_TAGS = ['｜DSML｜', ...dsmlTags()];
const BARE_READERS = ALL_TAGS.map((tag) => ({ tag, start: `<${tag}invoke`, calls: dsmlTagCalls(tag) }));

/**
 * Near miss (recall11, repair `missing-envelope-open`): the whole output (or the call after a
 * short announcing lead-in, engine/lead-in.ts) is DSML invokes with no block around them, the
 * block's closer alone after them or not even that. DeepSeek's encoding makes a call the block, so
 * a wrapper-less invoke is off-spec: SGLang reads it (sgl-project/sglang#40236: 90 of 455 fuzzed
 * shapes had no wrapper), Dynamo refuses it (ai-dynamo/frontend-crates#123: it may be markup the
 * model echoes), and a gateway saw the opener eaten and the rest streamed as text
 * (Wei-Shaw/sub2api#6042). Read here only as the whole output, so an invoke inside a block the
 * block reader refused (an undeclared sibling, a cut) is never read on its own; every invoke
 * closed, nothing but blanks between and after them (one block closer in the same spelling
 * aside), every call naming a declared tool whose schema its arguments fit. Else text.
 */
function bareInvokes(text: string, ctx: ParseContext): EnvelopeMatch | null {
  const i = skipWs(text, 0);
  const r = BARE_READERS.find((b) => text.startsWith(b.start, i));
  if (!r) return null;
  let body = text.slice(i).trimEnd();
  for (const [, close] of BLOCKS) {
    const c = `</${r.tag}${close}>`;
    if (body.endsWith(c)) {
      body = body.slice(0, -c.length);
      break;
    }
  }
  const read = readXmlCalls(body, r.calls, ctx);
  if ('error' in read || !slipGate(read.calls, ctx)) return null;
  const repairs = r.tag === '｜DSML｜' ? ['missing-envelope-open'] : ['missing-envelope-open', 'dsml-bar'];
  for (const c of read.calls) c.repairs = [...(c.repairs ?? []), ...repairs];
  return { end: text.length, calls: read.calls };
}

export const deepseekV32 = defineFamily({
  name: 'deepseek-v32',
  markers: [OPEN, OPEN_V4, ...VARIANTS.keys()],
  priority: 40,
  backend: { vllm: 'deepseek_v32', llamacpp: 'DeepSeek V3.2', sglang: 'deepseekv32' },
  wholeStarts: BARE_READERS.map((b) => b.start),
  matchWhole: bareInvokes,
  match(input): MatchResult {
    if (input.marker === OPEN) return v32(input);
    const variant = VARIANTS.get(input.marker);
    if (variant) return variant(input);
    const m = v4(input);
    return m && m !== 'need-more' ? { ...m, backendHint: V4_HINT } : m;
  },
});
