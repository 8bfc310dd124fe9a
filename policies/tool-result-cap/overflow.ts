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
 *   in UTF-8 bytes, 3 a token: kit/cut.ts's rate for printable ASCII), so a message's position is a
 *   function of what precedes it: the next turn, which only appends, gives every earlier message
 *   the same position;
 * - when the prompt is over the window, every tool result that starts before a boundary is cut.
 *   Over is known two ways. The backend refused this very prompt for its length (the attempt loop
 *   says so with the fact PROMPT_OVER_WINDOW of policies/types.ts and sends the request again):
 *   then it is. Or, before any refusal, the prompt's bytes are over the window at CERTAIN_BYTES
 *   a token, more than any tokenizer packs into a token of real text: at the grid's 3 a token, a
 *   prompt of English and code (~3.5-4.5 bytes a token) would be cut while it still fits, at
 *   three quarters of the window, before the agent's own compaction and with nothing to gain. A
 *   prompt in between is sent as it is, and cut only if the backend refuses it (one refusal a
 *   turn, which costs the backend its tokenizing only); The boundary moves in steps of a quarter of the window (the last half of the window,
 *   rounded down to a step, stays whole): turns that add less than a step cut the same results,
 *   and a step cuts only results after those already cut, so the prompt changes once per quarter
 *   window of growth, at the first newly cut result, never before it;
 * - each cut is made from the result's own characters and the window only (its head and tail,
 *   with the single-result marker, kit/cut.ts), so a result cut on one turn is the same bytes on
 *   every later one.
 * Results under twice the kept size are left whole (cutting them would save little beside the
 * marker). Positions and the boundary are kit/overflow.ts's (an image counts IMAGE_TOKENS there,
audio nothing), shared with the documents and images policies. When cutting every result
 * before the boundary still leaves the prompt over the window (the conversation itself is), the
 * backend's refusal is relayed, as before.
 */
import type { ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { messagesBeforeBoundary } from '../kit/overflow.js';

/** What an older result is cut to in a window of `window` tokens (kit/overflow.ts). */
export { keptTokens } from '../kit/overflow.js';

/**
 * The tool messages of `request` to cut so that its prompt (estimated) has a chance to fit
 * `window` tokens, and how many messages start before the boundary (`older`): none when it is not
 * known to be over (`refused`: the backend refused it for its length; else its bytes past
 * CERTAIN_BYTES_PER_TOKEN a token of the window), or when it holds no tool result before the
 * boundary. `messages` are the request's messages after each result was held to its own cap.
 */
export function resultsToCut(
  request: Pick<ChatCompletionRequest, 'tools'>,
  messages: readonly ChatMessage[],
  window: number,
  refused = false,
  /** The window the boundary is placed in (kit/overflow.ts calibratedWindow). */
  fit = window,
): { older: number; results: number[] } {
  if (!messages.some((m) => m?.role === 'tool')) return { older: 0, results: [] };
  const older = messagesBeforeBoundary(request.tools, messages, window, refused, fit);
  const results: number[] = [];
  for (let i = 0; i < older; i++) if (messages[i]?.role === 'tool') results.push(i);
  return { older, results };
}
