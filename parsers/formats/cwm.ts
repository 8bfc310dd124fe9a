/**
 * CWM (vLLM `cwm`, "Cursor-style" tool tags): one block per call,
 *   <tool: function>
 *   NAME PAYLOAD
 *   </tool>
 * The tag's label is informational. NAME is the first word of the body; the payload (the rest
 * of that line and the lines after it) is the arguments when it is a JSON object, and
 * otherwise a shell-style command line, `{"command": PAYLOAD}`, the way vLLM reads it. That
 * wrapping invents a key, so it is done only for a declared tool that has a `command`
 * parameter; any other plain payload stays text. A block left open, or holding another
 * block's open tag, stays text. Shorthand (vLLM reads it too): `<tool: NAME payload </tool>`,
 * the `>` after the label missing, names the tool by the label; its `</tool>` must end a line.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { scanJsonValue } from '../kit/json-scan.js';
import { decodeJsonLenient } from '../kit/lenient-json.js';
import { createArgs, paramSchema } from '../kit/schema-values.js';
import type { ParseContext, ParsedCall } from '../types.js';

const OPEN = '<tool:';
const CLOSE = '</tool>';
/** Longest label read in the open tag (`function`). */
const MAX_LABEL = 32;
const SPACE = /\s/;

/**
 * `<tool: LABEL>`: where the body starts; with the shorthand `<tool: NAME payload </tool>`
 * (no `>` after the label) the label is the tool's name and the body starts after it.
 * null when this is no such tag, or 'need-more'.
 */
function openTag(
  text: string,
  start: number,
  final: boolean,
): { bodyStart: number; name?: string } | null | 'need-more' {
  let i = start + OPEN.length;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
  const label = i;
  while (i < text.length && i - label <= MAX_LABEL && text[i] !== '>' && !SPACE.test(text[i]!)) i++;
  if (i - label > MAX_LABEL) return null;
  if (i >= text.length) return final ? null : 'need-more';
  if (i === label) return null;
  const labelEnd = i;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
  if (i >= text.length) return final ? null : 'need-more';
  if (text[i] === '>') return { bodyStart: i + 1 };
  return { bodyStart: labelEnd, name: text.slice(label, labelEnd) };
}

function readBody(body: string, ctx: ParseContext, shorthandName?: string): ParsedCall | { error: string } {
  const t = body.trim();
  let n = 0;
  if (shorthandName === undefined) while (n < t.length && !SPACE.test(t[n]!)) n++;
  const name = shorthandName ?? t.slice(0, n);
  if (name === '') return { error: 'empty tool block' };
  // vLLM drops blank lines inside the payload; keep the text as written otherwise
  const payload = t
    .slice(n)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .join('\n')
    .trim();
  if (payload === '') return { name, arguments: {} };
  if (payload.startsWith('{') || payload.startsWith('[')) {
    const scan = scanJsonValue(payload, 0);
    if (scan && scan.end === payload.length) {
      const d = decodeJsonLenient(payload, { allowMissingClose: false });
      if (d) return { name, arguments: d.value, ...(d.repairs.length > 0 ? { repairs: d.repairs } : {}) };
    }
  }
  // (an undeclared name goes on, so that its leak says so)
  const tool = ctx.tools.get(name);
  if (tool !== undefined && paramSchema(tool, 'command') === undefined) {
    return { error: 'plain payload for a tool without a command parameter' };
  }
  const args = createArgs();
  args['command'] = payload;
  return { name, arguments: args };
}

function matchBlock({ text, start, final, ctx, find }: MatchInput): MatchResult {
  const tag = openTag(text, start, final);
  if (tag === null || tag === 'need-more') return tag;
  const { bodyStart } = tag;
  const close = find(CLOSE, bodyStart);
  if (close < 0) {
    if (!final) return 'need-more';
    return { end: text.length, calls: [], error: 'tool block not closed', truncated: true };
  }
  const end = close + CLOSE.length;
  if (tag.name !== undefined) {
    // the shorthand is also how prose could read ("use <tool: python to …, then </tool> …"):
    // its close must end the line
    let j = end;
    while (j < text.length && (text[j] === ' ' || text[j] === '\t' || text[j] === '\r')) j++;
    if (j >= text.length && !final) return 'need-more';
    if (j < text.length && text[j] !== '\n') return null;
  }
  const body = text.slice(bodyStart, close);
  // a block that never closed before the next one opened: which text is whose is unclear
  if (body.includes(OPEN)) return { end, calls: [], error: 'tool block reopened' };
  const r = readBody(body, ctx, tag.name);
  return 'error' in r ? { end, calls: [], error: r.error } : { end, calls: [r] };
}

export const cwm = defineFamily({
  name: 'cwm',
  markers: [OPEN],
  priority: 43,
  backend: { vllm: 'cwm' },
  match: matchBlock,
});
