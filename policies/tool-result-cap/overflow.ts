/**
 * Tool results that each fit the window but together overflow it. A single result the window
 * cannot hold is cut by itself (index.ts); a history of many results that each fit (an agent's
 * thirty `cat`s and test runs) grows past the window all the same, and the backend refuses every
 * later turn, the agent's compaction request too (it carries the same history).
 *
 * The rescue cuts the older results, never the conversation's last stretch, and must keep the
 * prompt's bytes the same from turn to turn (docs/prefix.md), deciding only from what the turn
 * carries. So:
 * - positions are counted from the start of the prompt (the tools, then each message in order,
 *   estimated as cut.ts estimates), so a message's position is a function of what precedes it:
 *   the next turn, which only appends, gives every earlier message the same position;
 * - when the whole estimate is over the window, every tool result that starts before a boundary
 *   is cut. The boundary moves in steps of a quarter of the window (the last half of the window,
 *   rounded down to a step, stays whole): turns that add less than a step cut the same results,
 *   and a step cuts only results after those already cut, so the prompt changes once per quarter
 *   window of growth, at the first newly cut result, never before it;
 * - each cut is made from the result's own characters and the window only (its head and tail,
 *   with the single-result marker, cut.ts), so a result cut on one turn is the same bytes on
 *   every later one.
 * Results under twice the kept size are left whole (cutting them would save little beside the
 * marker). Only text counts: an image or audio part is not estimated. When cutting every result
 * before the boundary still leaves the prompt over the window (the conversation itself is), the
 * backend's refusal is relayed, as before.
 */
import type { ChatMessage, ChatCompletionRequest } from '../../protocol/openai.js';
import { estimateTokens } from './cut.js';

/** What each message costs beside its text (role, the template's markers), in tokens. */
const MESSAGE_OVERHEAD = 4;

/** The tokens an older result keeps when cut: a sixty-fourth of the window, within these bounds. */
const KEEP_MIN = 64;
const KEEP_MAX = 1024;

/** What an older result is cut to in a window of `window` tokens. */
export function keptTokens(window: number): number {
  return Math.min(KEEP_MAX, Math.max(KEEP_MIN, Math.floor(window / 64)));
}

function textOf(content: ChatMessage['content'], each: (text: string) => void): void {
  if (typeof content === 'string') each(content);
  else if (Array.isArray(content))
    for (const p of content) if (p?.type === 'text' && typeof p.text === 'string') each(p.text);
}

/** `m`'s characters of text (an upper bound of its tokens beside the overhead). */
function charsOf(m: ChatMessage): number {
  let n = MESSAGE_OVERHEAD;
  textOf(m.content, (t) => {
    n += t.length;
  });
  if (typeof m.reasoning_content === 'string') n += m.reasoning_content.length;
  if (Array.isArray(m.tool_calls))
    for (const c of m.tool_calls) {
      const f = c?.function;
      if (typeof f?.name === 'string') n += f.name.length;
      if (typeof f?.arguments === 'string') n += f.arguments.length;
    }
  return n;
}

/** `m`'s estimated tokens (cut.ts's estimate over its text, and the overhead). */
function tokensOf(m: ChatMessage): number {
  let n = MESSAGE_OVERHEAD;
  textOf(m.content, (t) => {
    n += estimateTokens(t);
  });
  if (typeof m.reasoning_content === 'string') n += estimateTokens(m.reasoning_content);
  if (Array.isArray(m.tool_calls))
    for (const c of m.tool_calls) {
      const f = c?.function;
      if (typeof f?.name === 'string') n += estimateTokens(f.name);
      if (typeof f?.arguments === 'string') n += estimateTokens(f.arguments);
    }
  return n;
}

/**
 * The indexes of the tool messages of `request` to cut so that its prompt (estimated) has a
 * chance to fit `window` tokens: empty when it fits, or when it holds no tool result before the
 * boundary. `messages` are the request's messages after each result was held to its own cap.
 */
export function resultsToCut(
  request: Pick<ChatCompletionRequest, 'tools'>,
  messages: readonly ChatMessage[],
  window: number,
): number[] {
  if (!messages.some((m) => m?.role === 'tool')) return [];
  // Every character is at most a token: a prompt of fewer characters than the window fits.
  let chars = 0;
  for (const m of messages) chars += m ? charsOf(m) : 0;
  if (chars <= window) return [];
  const tools = request.tools === undefined ? '' : JSON.stringify(request.tools);
  if (chars + tools.length <= window) return [];
  const sizes = messages.map((m) => (m ? tokensOf(m) : 0));
  const start = estimateTokens(tools);
  const total = sizes.reduce((a, b) => a + b, start);
  if (total <= window) return [];
  const step = Math.max(1, Math.floor(window / 4));
  const boundary = Math.floor(total / step) * step - Math.floor(window / 2);
  const out: number[] = [];
  let at = start;
  for (let i = 0; i < messages.length && at < boundary; i++) {
    if (messages[i]?.role === 'tool') out.push(i);
    at += sizes[i]!;
  }
  return out;
}
