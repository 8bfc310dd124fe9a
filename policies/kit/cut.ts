/**
 * Cutting an oversized text (a tool result, a document's extracted text) to its head and tail,
 * from its own characters only: the same text gives the same cut on every turn (the prompt's
 * prefix holds, docs/prefix.md), whatever else the conversation holds. The marker in the middle
 * says how much was left out and how to see it. One pass over the text; no regular expression
 * runs on client input.
 *
 * The cap is in tokens, estimated per character: printable ASCII and line breaks, which tokenize
 * at several characters a token, cost a third of a token; every other UTF-16 unit (a control
 * character or a NUL of a binary dump, CJK, an emoji's halves, a replacement character) costs a
 * whole token, as byte-level tokenizers give it at least one. A flat 3 characters a token let a
 * dense result through at up to 3x the cap (24,000 NULs under an 8,000-token cap overflowed a
 * 32k window).
 */

/** Characters per token the cap assumes for printable ASCII (logs and code tokenize densely). */
export const CHARS_PER_TOKEN = 3;
/** The share of the kept characters taken from the head (the rest from the tail). */
const HEAD_SHARE = 0.6;
/** How far (a share of each side) a cut may move to end on a line break. */
const LINE_SLACK = 0.2;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** A character's cost in thirds of a token (CHARS_PER_TOKEN of them make one token). */
function weightAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  return (c >= 0x20 && c < 0x7f) || c === 0x0a || c === 0x09 || c === 0x0d ? 1 : CHARS_PER_TOKEN;
}

/** `text`'s estimated cost in thirds of a token, counted no further than `stopAbove`. */
function weightOf(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let w = 0;
  for (let i = 0; i < text.length && w <= stopAbove; i++) w += weightAt(text, i);
  return w;
}

/** The estimated tokens of `text` (what the cap compares against `maxToolResultTokens`). */
export function estimateTokens(text: string): number {
  return Math.ceil(weightOf(text) / CHARS_PER_TOKEN);
}

function countLines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The marker a cut leaves: what was left out of how much, in how many lines. */
export type CutMarker = (left: number, total: number, lines: number) => string;

const lineCount = (lines: number) => `${lines} line${lines === 1 ? '' : 's'}`;

const toolResultMarker: CutMarker = (left, total, lines) =>
  `[... toolproof left out ${left} of this tool result's ${total} characters` +
  ` (${lineCount(lines)}) to fit the model's context window;` +
  ' re-run with a narrower command (grep, head, tail, a line range) to see them ...]';

/** A document's extracted text: the client cannot narrow a command, it can send less of it. */
export const documentMarker: CutMarker = (left, total, lines) =>
  `[... toolproof left out ${left} of this document's ${total} characters of text` +
  ` (${lineCount(lines)}) to fit the model's context window; send the pages needed on their own to see them ...]`;

/** `text` (a tool result) cut to about `maxTokens` tokens, or `text` itself when it fits. */
export function cutToolResult(text: string, maxTokens: number): string {
  return cutText(text, maxTokens, toolResultMarker);
}

/** `text` cut to about `maxTokens` tokens with `marker` between head and tail, or `text` itself when it fits. */
export function cutText(text: string, maxTokens: number, marker: CutMarker): string {
  const limit = maxTokens * CHARS_PER_TOKEN;
  // Every character costs at least 1 and at most CHARS_PER_TOKEN: most texts need no count.
  if (text.length <= maxTokens) return text;
  if (text.length <= limit && weightOf(text, limit) <= limit) return text;
  const headBudget = Math.floor(limit * HEAD_SHARE);
  const tailBudget = limit - headBudget;
  // The head: as many characters as its budget pays for; `headSoft` is where a line break may end it.
  let headEnd = 0;
  let headSoft = 0;
  for (let w = 0; headEnd < text.length; headEnd++) {
    const next = w + weightAt(text, headEnd);
    if (next > headBudget) break;
    w = next;
    if (w <= headBudget - headBudget * LINE_SLACK) headSoft = headEnd + 1;
  }
  const nl = text.lastIndexOf('\n', headEnd - 1);
  if (nl >= 0 && nl + 1 >= headSoft) headEnd = nl + 1;
  if (headEnd > 0 && isLowSurrogate(text.charCodeAt(headEnd))) headEnd--;
  // The tail: as many characters from the end as its budget pays for; it may start at a line start up to `tailSoft`.
  let tailStart = text.length;
  let tailSoft = text.length;
  for (let w = 0; tailStart > headEnd; tailStart--) {
    const next = w + weightAt(text, tailStart - 1);
    if (next > tailBudget) break;
    w = next;
    if (w <= tailBudget - tailBudget * LINE_SLACK) tailSoft = tailStart - 1;
  }
  const next = text.indexOf('\n', tailStart);
  if (next >= 0 && next < tailSoft) tailStart = next + 1;
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  const left = tailStart - headEnd;
  const lines = countLines(text, headEnd, tailStart);
  const head = text.slice(0, headEnd);
  const sep = head.endsWith('\n') ? '' : '\n';
  const cut = `${head}${sep}${marker(left, text.length, lines)}\n${text.slice(tailStart)}`;
  // A cap near or under the marker's own size (a share of a few tokens among thousands of short
  // parts or documents) would make the text longer, not shorter: 100,000 ten-character parts of
  // one tool result went upstream as 22 MB for the client's 3.6 MB. Such a text stays whole.
  // Counted no further than the cut's estimate: at most the cap and the marker's length.
  const kept = weightOf(cut);
  return weightOf(text, kept) > kept ? cut : text;
}
