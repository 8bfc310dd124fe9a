/**
 * Cutting an oversized tool result to its head and tail, from its own characters only: the same
 * result gives the same text on every turn (the prompt's prefix holds, docs/prefix.md), whatever
 * else the conversation holds. The marker in the middle says how much was left out and how to
 * see it. One pass over the text; no regular expression runs on client input.
 */

/** Characters per token the cap assumes: few enough for logs and code, which tokenize densely. */
export const CHARS_PER_TOKEN = 3;
/** The share of the kept characters taken from the head (the rest from the tail). */
const HEAD_SHARE = 0.6;
/** How far (a share of each side) a cut may move to end on a line break. */
const LINE_SLACK = 0.2;

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function countLines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** `text` cut to about `maxTokens` tokens, or `text` itself when it fits. */
export function cutToolResult(text: string, maxTokens: number): string {
  const limit = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= limit) return text;
  const headBudget = Math.floor(limit * HEAD_SHARE);
  const tailBudget = limit - headBudget;
  // The head ends after a line break near its budget when there is one, else at the budget.
  let headEnd = headBudget;
  const nl = text.lastIndexOf('\n', headBudget - 1);
  if (nl >= 0 && nl >= headBudget - headBudget * LINE_SLACK) headEnd = nl + 1;
  if (isLowSurrogate(text.charCodeAt(headEnd))) headEnd--;
  // The tail starts at a line start near its budget when there is one.
  let tailStart = text.length - tailBudget;
  const next = text.indexOf('\n', tailStart);
  if (next >= 0 && next < tailStart + tailBudget * LINE_SLACK) tailStart = next + 1;
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  const left = tailStart - headEnd;
  const lines = countLines(text, headEnd, tailStart);
  const marker =
    `[... toolproof left out ${left} of this tool result's ${text.length} characters` +
    ` (${lines} line${lines === 1 ? '' : 's'}) to fit the model's context window;` +
    ' re-run with a narrower command (grep, head, tail, a line range) to see them ...]';
  const head = text.slice(0, headEnd);
  const sep = head.endsWith('\n') ? '' : '\n';
  return `${head}${sep}${marker}\n${text.slice(tailStart)}`;
}
