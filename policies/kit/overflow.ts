/**
 * Where a prompt over its window is cut: the older messages, never the conversation's last
 * stretch, decided from the turn alone so later turns cut the same (docs/prefix.md, exceptions 9
 * and 10). The policies that shorten a prompt over its window share it: tool-result-cap cuts the
 * older tool results, documents the older documents, images notes the older images.
 *
 * - Positions are counted from the start of the prompt (the tools, then each message in order,
 *   in UTF-8 bytes, BYTES_PER_TOKEN a token, an image IMAGE_TOKENS): a message's position is a
 *   function of what precedes it, and the next turn, which only appends, gives every earlier
 *   message the same position.
 * - Over is known two ways. The backend refused this very prompt for its length (the attempt
 *   loop says so with PROMPT_OVER_WINDOW and prepares the request again): then it is. Or, before
 *   any refusal, its text bytes are past CERTAIN_BYTES_PER_TOKEN a token of the window (images
 *   not counted: one may cost far fewer tokens than IMAGE_TOKENS).
 * - The boundary moves in steps of a quarter of the window, and the last half of the window,
 *   rounded down to a step, stays whole: turns that add less than a step cut the same messages,
 *   and a step cuts only messages after those already cut, so the prompt changes once per
 *   quarter window of growth, at the first newly cut message.
 */
import type { ChatMessage } from '../../protocol/openai.js';
import {
  BYTES_PER_TOKEN,
  CERTAIN_BYTES_PER_TOKEN,
  IMAGE_TOKENS,
  estimatedPromptTokens,
  jsonBytes,
  messageBytes,
  messageCounted,
  messageImages,
} from './prompt-bytes.js';

/** The tokens an older message's cut content keeps: a sixty-fourth of the window, within these bounds. */
const KEEP_MIN = 64;
const KEEP_MAX = 1024;

/** What an older tool result or document is cut to in a window of `window` tokens. */
export function keptTokens(window: number): number {
  return Math.min(KEEP_MAX, Math.max(KEEP_MIN, Math.floor(window / 64)));
}

/**
 * How many of `messages`, from the first, start before the boundary (their content may be cut):
 * 0 when the prompt is not known over `window` tokens. `tools`: the request's tools (counted first).
 */
export function messagesBeforeBoundary(
  tools: unknown,
  messages: readonly ChatMessage[],
  window: number,
  refused: boolean,
  /** The window the boundary is placed in: calibratedWindow's (`window` itself by default). */
  fit = window,
): number {
  const start = tools === undefined ? 0 : jsonBytes(tools);
  const sizes: number[] = [];
  let text = start;
  let images = 0;
  for (const m of messages) {
    const n = m ? messageBytes(m) : 0;
    const k = m ? messageImages(m) : 0;
    text += n;
    images += k;
    sizes.push(n + k * IMAGE_TOKENS * BYTES_PER_TOKEN);
  }
  if (!refused && text <= window * CERTAIN_BYTES_PER_TOKEN) return 0;
  const total = text + images * IMAGE_TOKENS * BYTES_PER_TOKEN;
  const step = Math.max(1, Math.floor(fit / 4)) * BYTES_PER_TOKEN;
  const boundary = Math.floor(total / step) * step - Math.floor(fit / 2) * BYTES_PER_TOKEN;
  let at = start;
  let i = 0;
  while (i < messages.length && at < boundary) at += sizes[i++]!;
  return i;
}

/**
 * What a cut prompt's estimate may reach beside the window: the last stretch kept whole (up to
 * three quarters of it) and the older turns' eighth leave an eighth for the notes and the turn
 * that straddles the boundary, so a backend that counts more than 7/8 of the estimate may refuse
 * the cut prompt still (a session of 20 parallel reads a turn in an 8k window: 0.95 of it, the cut
 * prompt 8,494 tokens).
 */
const HEADROOM = 8 / 7;

/** The largest scale (a tokenizer 64 times denser than the estimate is none). */
const MAX_SCALE = 64;

/**
 * The power of two by which the backend's count of a refused prompt (`ratio`: the tokens its
 * refusal reported over the prompt's estimatedPromptTokens) passes what the boundary's geometry
 * leaves room for (HEADROOM): 1 when it does not. An estimate short of the backend's count (a
 * template's wrapping of many small parallel calls; a backend that counts a call's JSON) placed
 * the boundary where the cut prompt was still over: every later turn was refused. Powers of two,
 * not the ratio itself: the ratio drifts a little with every turn, a power of two changes only when
 * the estimate falls short by another factor of two. The server remembers the largest per upstream
 * and model (PolicyContext.estimateScale), so it never goes back (docs/prefix.md, exception 9).
 */
export function calibrationScale(ratio: number): number {
  let scale = 1;
  while (scale < MAX_SCALE && scale < ratio * HEADROOM) scale *= 2;
  return scale;
}

/**
 * Past this many of the backend's tokens an estimated one (BYTES_PER_TOKEN bytes), a count is not
 * of the prompt's text: a byte-level tokenizer gives at most one token a byte, and this leaves as
 * much again for the template's own.
 */
const MAX_RATIO = 2 * BYTES_PER_TOKEN;

/**
 * The scale an overflow refusal's `reported` prompt tokens give for the prompt it refused (`tools`
 * and `messages` as sent): calibrationScale of their ratio to its estimate, or 1 when the count is
 * not one of what the estimate counts. A part the estimate cannot count (audio, video, a file), or
 * a count no tokenizer gives for the text (an upstream's garbage, 999,999,999), made the largest
 * scale, remembered for the model: every later prompt's window a sixty-fourth of the real one
 * (tests/redteam/estimate-scale-uncounted.test.ts). Such a refusal still teaches the window.
 */
export function refusalScale(reported: number, tools: unknown, messages: readonly ChatMessage[]): number {
  for (const m of messages) if (m && !messageCounted(m)) return 1;
  const ratio = reported / Math.max(1, estimatedPromptTokens(tools, messages));
  return ratio > MAX_RATIO ? 1 : calibrationScale(ratio);
}

/**
 * The window in the estimate's own tokens (kit/prompt-bytes.ts, BYTES_PER_TOKEN a token) under
 * `scale` (PolicyContext.estimateScale): the boundary (messagesBeforeBoundary's `fit`) and the room
 * the older messages keep are placed as the backend counts.
 */
export function calibratedWindow(window: number, scale: number | undefined): number {
  if (scale === undefined || !(scale > 1)) return window;
  return Math.max(1, Math.floor(window / Math.min(scale, MAX_SCALE)));
}

/** Bytes a token under which no count is believed: two tokens a byte (MAX_RATIO). */
const MIN_BYTES_PER_TOKEN = BYTES_PER_TOKEN / MAX_RATIO;

/**
 * The UTF-8 bytes a token the backend's count of a refused prompt gives (`reported` tokens for
 * `tools` and `messages` as sent, in messageBytes' and jsonBytes' bytes), in eighths, at most
 * CERTAIN_BYTES_PER_TOKEN: the prompt's own text under the model's own tokenizer (English prose
 * ~4, code ~3.5, CJK and base64 less). Undefined when the count is not of what the bytes count (an
 * image, audio, a file: tokens the bytes do not hold) or past two tokens a byte (an upstream's
 * garbage). The turn-over-window test (policies/truncation cutTurnsOverWindow) judges by it, not
 * by BYTES_PER_TOKEN, stricter than real tokenizers: a paste of 0.75-1x the window was cut where
 * the agent's compaction of the older turns would have kept it whole.
 */
export function measuredBytesPerToken(
  reported: number,
  tools: unknown,
  messages: readonly ChatMessage[],
): number | undefined {
  for (const m of messages) if (m && (!messageCounted(m) || messageImages(m) > 0)) return undefined;
  if (!(reported > 0)) return undefined;
  const ratio = (estimatedPromptTokens(tools, messages) * BYTES_PER_TOKEN) / reported;
  if (!(ratio >= MIN_BYTES_PER_TOKEN)) return undefined;
  return Math.min(CERTAIN_BYTES_PER_TOKEN, Math.floor(ratio * 8) / 8);
}
