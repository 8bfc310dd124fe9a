/**
 * Kimi K2: <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>.
 * The whole section is one envelope (all or nothing). The call id (functions.NAME:0) is kept,
 * as the Kimi template expects it back in history.
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { decodeBody, sectionOrLoneCall } from '../kit/envelope.js';
import { scanJsonValue, skipWs, strictObject } from '../kit/json-scan.js';
import { isPlainObject } from '../kit/lenient-json.js';
import { fitsSchema } from '../kit/schema-values.js';

const SECTION_OPEN = '<|tool_calls_section_begin|>';
const SECTION_CLOSE = '<|tool_calls_section_end|>';
const CALL_OPEN = '<|tool_call_begin|>';
const CALL_CLOSE = '<|tool_call_end|>';
const ARGS = '<|tool_call_argument_begin|>';

/**
 * The function name inside a call id: `functions.get_weather:0` and `get_weather:0` name it.
 * `functions.:0`, `functions:0` or a bare counter `0` do not (Kimi drops the name); then the
 * call is the only declared tool, or the one declared tool whose parameters hold every
 * argument key (vLLM infers it the same way). Ambiguous: '' (the section stays text).
 */
function nameFromId(id: string, ctx: ParseContext, args: unknown): string {
  const dot = id.startsWith('functions.') ? 'functions.'.length : 0;
  const colon = id.lastIndexOf(':');
  const name = id.slice(dot, colon >= dot ? colon : id.length);
  if (name !== '' && name !== 'functions' && !/^\d+$/.test(name)) return name;
  if (ctx.tools.size === 1) return [...ctx.tools.keys()][0] ?? '';
  if (!isPlainObject(args)) return '';
  const keys = Object.keys(args);
  if (keys.length === 0) return '';
  const fits = [...ctx.tools.values()].filter((t) => {
    const props = t.parameters?.['properties'];
    return isPlainObject(props) && keys.every((k) => Object.hasOwn(props, k));
  });
  return fits.length === 1 ? (fits[0]?.name ?? '') : '';
}

/** One block: `functions.NAME:0<|tool_call_argument_begin|>{…}`; the id is kept. */
function readCall(
  head: string,
  args: string,
  _truncated: boolean,
  ctx: ParseContext,
): ParsedCall | { error: string } {
  const id = head.trim();
  // not cut off, the arguments ended at <|tool_call_end|>: a last `}` missing is missing right
  // before it (missing-brace, schema-gated by the engine)
  const d = decodeBody(args, true);
  if (!d) return { error: 'arguments are not JSON' };
  const name = nameFromId(id, ctx, d.value);
  if (name === '') return { error: 'no function name' };
  return { name, arguments: d.value, id, ...(d.repairs.length ? { repairs: d.repairs } : {}) };
}

const ID = /^(?:functions\.)?([A-Za-z_][\w.-]*):\d+$/;
const ID_THEN_OBJECT = /^\s*((?:functions\.)?([A-Za-z_][\w.-]{0,255}):\d{1,9})\s*\{/;

/**
 * Near miss (recall21, repair `missing-argument-begin`): a closed block whose
 * `<|tool_call_argument_begin|>` is gone, `<|tool_call_begin|> functions.NAME:0 {json}
 * <|tool_call_end|>` (vllm-project/vllm#31207 quotes it leaked into streamed content, the section
 * markers gone too). Read only when the block is exactly an id naming a declared tool, blanks,
 * one strict JSON object that fits the tool's schema, and blanks: no name is inferred, anything
 * else refuses the block (and its section) as before.
 */
function readWithoutSep(block: string, ctx: ParseContext): ParsedCall | null {
  const head = ID_THEN_OBJECT.exec(block);
  const tool = head ? ctx.tools.get(head[2] ?? '') : undefined;
  if (!head || !tool) return null;
  const j = head[0].length - 1;
  const scan = scanJsonValue(block, j);
  if (!scan || scan.end < 0 || skipWs(block, scan.end) !== block.length) return null;
  const args = strictObject(block, j, scan.end);
  if (args === null || !fitsSchema(args, tool)) return null;
  return { name: tool.name, arguments: args, id: head[1] ?? '', repairs: ['missing-argument-begin'] };
}

const envelope = sectionOrLoneCall({
  sectionOpen: SECTION_OPEN,
  sectionClose: SECTION_CLOSE,
  callOpen: CALL_OPEN,
  callClose: CALL_CLOSE,
  sep: ARGS,
  noSep: 'no argument marker',
  readCall,
  readWithoutSep,
});

/**
 * Near miss (issue 30, repair `missing-call-begin`): the whole output is Kimi K2 blocks that lost
 * their openers, `NAME:0<|tool_call_argument_begin|>{json}` each closed by `<|tool_call_end|>` or
 * `<|tool_calls_section_end|>` (Fireworks' kimi-k2p6-turbo, typeclaw/typeclaw#344). Held by the
 * name frame `NAME:`; read only when every block is exactly an id naming a declared tool
 * (`functions.` optional, a numeric index), one strict JSON object that fits the tool's schema
 * and one of the two closers, with nothing but blanks between blocks. Anything else stays text.
 */
function matchWhole(text: string, ctx: ParseContext): EnvelopeMatch | null {
  let i = skipWs(text, 0);
  // cheap refusal first (every held output comes here): the output opens with an id naming a
  // declared tool, then ':'
  const head = /^(?:functions\.)?([A-Za-z_][\w.-]*):/.exec(text.slice(i, i + 256));
  if (!head || !ctx.tools.has(head[1] ?? '')) return null;
  const calls: ParsedCall[] = [];
  while (i < text.length) {
    const sep = text.indexOf(ARGS, i);
    if (sep < 0) return null;
    const id = text.slice(i, sep);
    const name = ID.exec(id)?.[1];
    const tool = name === undefined ? undefined : ctx.tools.get(name);
    if (name === undefined || !tool) return null;
    const j = skipWs(text, sep + ARGS.length);
    if (text[j] !== '{') return null;
    const scan = scanJsonValue(text, j);
    if (!scan || scan.end < 0) return null;
    const args = strictObject(text, j, scan.end);
    if (args === null || !fitsSchema(args, tool)) return null;
    const k = skipWs(text, scan.end);
    const closer = text.startsWith(CALL_CLOSE, k)
      ? CALL_CLOSE
      : text.startsWith(SECTION_CLOSE, k)
        ? SECTION_CLOSE
        : '';
    if (closer === '') return null;
    calls.push({ name, arguments: args, id, repairs: ['missing-call-begin'] });
    i = skipWs(text, k + closer.length);
    // a call closed by <|tool_call_end|> may still be followed by the section's own end
    if (closer === CALL_CLOSE && text.startsWith(SECTION_CLOSE, i))
      i = skipWs(text, i + SECTION_CLOSE.length);
  }
  return calls.length ? { end: text.length, calls } : null;
}

export const kimiK2 = defineFamily({
  name: 'kimi-k2',
  markers: [SECTION_OPEN, CALL_OPEN],
  priority: 10,
  backend: { vllm: 'kimi_k2', llamacpp: 'Kimi K2', sglang: 'kimi_k2' },
  wholeNameStarts: [
    { before: '', after: [':'] },
    { before: 'functions.', after: [':'] },
  ],
  matchWhole,
  match(input): MatchResult {
    return envelope(input);
  },
});
