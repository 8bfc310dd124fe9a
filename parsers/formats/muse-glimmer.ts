/**
 * MuseGlimmer (vLLM `muse_glimmer`, llama.cpp "Muse Glimmer"): messages addressed by recipient,
 *   <|start|>assistant to=self<|message|>reasoning<|eom|>
 *   <|start|>assistant to=TOOL<|message|><atem:function_calls>
 *     <atem:invoke name="TOOL"><atem:parameter name="K">value</atem:parameter></atem:invoke>
 *   </atem:function_calls><|eom|>
 *   <|start|>assistant to=user<|message|>answer<|eot|>
 * The prompt ends with `<|start|>assistant`, so the output's first header is only
 * ` to=RECIPIENT<|message|>` (read at the very start of the output only).
 *
 * Only a message addressed to a tool can hold calls: ATEM markup in a `to=self` message is
 * reasoning, and markup in a `to=user` answer is quoted text (it stays content). A `to=user`
 * header is a control token, so the answer streams as it comes; a `to=self` message is reasoning
 * up to `<|eom|>`, `<|eot|>` or the next `<|start|>`. Parameter values are typed by the declared
 * schema (an undeclared one is JSON when it reads as JSON). A doubled `NAME.NAME` invoke (the
 * template renders a bare tool name as `NAME.*`) means the declared `NAME`.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchInput, MatchResult } from '../engine/family.js';
import { expectLiteral } from '../kit/json-scan.js';
import { controlToken, readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import type { ParseContext, ParsedCall } from '../types.js';

const LEAD = ' to=';
const START = '<|start|>assistant';
const MESSAGE = '<|message|>';
const EOM = '<|eom|>';
const EOT = '<|eot|>';
const NEXT = '<|start|>';
const CALLS_OPEN = '<atem:function_calls>';
const CALLS_CLOSE = '</atem:function_calls>';
/** Longest recipient read in a header. */
const MAX_RECIPIENT = 128;

const ATEM: XmlCallSpec = {
  callOpen: '<atem:invoke name="',
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</atem:invoke>',
  argOpen: '<atem:parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</atem:parameter>',
  valueMode: () => 'schema-json',
};

function isNameChar(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    c === 0x5f ||
    c === 0x2e ||
    c === 0x2d
  );
}

type Header = { rcpt: string; end: number } | 'need-more' | null;

/** `RECIPIENT<|message|>` at `i` (after `to=`). */
function readRecipient(text: string, i: number, final: boolean): Header {
  let j = i;
  while (j < text.length && j - i <= MAX_RECIPIENT && isNameChar(text.charCodeAt(j))) j++;
  if (j - i > MAX_RECIPIENT) return null;
  if (j === text.length) return final ? null : 'need-more';
  if (j === i) return null;
  const lit = expectLiteral(text, j, MESSAGE, final);
  if (lit !== 'yes') return lit === 'need-more' ? 'need-more' : null;
  return { rcpt: text.slice(i, j), end: j + MESSAGE.length };
}

/** After `<|start|>assistant`: spaces, then `to=RECIPIENT<|message|>` or a bare `<|message|>`. */
function readStartHeader(text: string, i: number, final: boolean): Header {
  let j = i;
  while (text[j] === ' ' || text[j] === '\t') j++;
  if (j === text.length) return final ? null : 'need-more';
  const bare = expectLiteral(text, j, MESSAGE, final);
  if (bare === 'yes') return { rcpt: 'user', end: j + MESSAGE.length };
  const to = expectLiteral(text, j, 'to=', final);
  if (to !== 'yes') return to === 'need-more' || bare === 'need-more' ? 'need-more' : null;
  return readRecipient(text, j + 3, final);
}

/** The first of `<|eom|>`, `<|eot|>`, `<|start|>` from `from`: where the message ends. */
function messageEnd(input: MatchInput, from: number): { at: number; end: number } | null {
  let best: { at: number; end: number } | null = null;
  for (const [lit, consumed] of [
    [EOM, true],
    [EOT, true],
    [NEXT, false],
  ] as const) {
    const at = input.find(lit, from);
    if (at >= 0 && (best === null || at < best.at)) best = { at, end: consumed ? at + lit.length : at };
  }
  return best;
}

/** `NAME.NAME` for an undeclared NAME.NAME and a declared NAME: the declared one. */
function collapseDoubled(c: ParsedCall, ctx: ParseContext): ParsedCall {
  if (typeof c.name !== 'string' || ctx.tools.has(c.name)) return c;
  const dot = c.name.indexOf('.');
  const head = c.name.slice(0, dot);
  return dot > 0 && c.name.slice(dot + 1) === head && ctx.tools.has(head) ? { ...c, name: head } : c;
}

function toolMessage(input: MatchInput, from: number): MatchResult {
  const { text, final, ctx } = input;
  let i = from;
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\t' || text[i] === '\r'))
    i++;
  const open = expectLiteral(text, i, CALLS_OPEN, final);
  if (open !== 'yes') return open === 'need-more' ? 'need-more' : null;
  const close = input.find(CALLS_CLOSE, i);
  if (close < 0)
    return final ? { end: text.length, calls: [], error: 'envelope cut off', truncated: true } : 'need-more';
  const r = readXmlCalls(text.slice(i + CALLS_OPEN.length, close), ATEM, ctx);
  const end = close + CALLS_CLOSE.length;
  if ('error' in r) return { end, calls: [], error: r.error };
  return { end, calls: r.calls.map((c) => collapseDoubled(c, ctx)) };
}

function matchMessage(input: MatchInput, h: Header): MatchResult {
  if (h === null || h === 'need-more') return h;
  const { text, final } = input;
  if (h.rcpt === 'user') return { end: h.end, calls: [], control: true };
  if (h.rcpt === 'self') {
    const stop = messageEnd(input, h.end);
    if (stop === null && !final) return 'need-more';
    const at = stop?.at ?? text.length;
    return { end: stop?.end ?? text.length, calls: [], reasoning: text.slice(h.end, at), control: true };
  }
  return toolMessage(input, h.end);
}

export const museGlimmer = defineFamily({
  name: 'muse-glimmer',
  markers: [LEAD, START, EOM, EOT],
  priority: 44,
  backend: { vllm: 'muse_glimmer', llamacpp: 'Muse Glimmer' },
  match(input) {
    const { text, start, marker, final } = input;
    if (marker === EOM || marker === EOT) return controlToken(start, marker);
    // the first header has no <|start|>assistant: the prompt ended with it
    if (marker === LEAD)
      return start === 0 ? matchMessage(input, readRecipient(text, LEAD.length, final)) : null;
    return matchMessage(input, readStartHeader(text, start + START.length, final));
  },
});
