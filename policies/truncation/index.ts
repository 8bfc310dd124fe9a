/**
 * truncation (request side): the Responses API's `truncation: "auto"` ("if the input exceeds the
 * model's context window, ... dropping items from the beginning of the conversation"; the Agents
 * SDK's ModelSettings.truncation), taken on chat completions too. Before, it was ignored: a
 * conversation whose own messages (a user's pasted text, long answers: nothing tool-result-cap or
 * documents may cut) grew past the window was the backend's refusal on that turn and on every
 * later one, though the client had said to drop what does not fit. Text under six bytes a token
 * (CJK, base64) is not known over the window before the backend says so (kit/overflow.ts); once it
 * has, the attempt loop prepares the request again with the window it named and the refusal's
 * scale, and the prompt is cut then, and on every later turn of the session from the start.
 *
 * What is left out: the messages after the leading system and developer ones that start before
 * the boundary of kit/overflow.ts (the last half of the window stays whole; the one that runs past
 * it stays while what is kept fits), and the tool results of a call left out; one user message in
 * their place says how many. The boundary moves in quarter-window
 * steps, so turns that add less than a step send the same bytes (docs/prefix.md). The field never
 * goes upstream (no backend has it).
 *
 * An agent's compaction turn (kit/last-turn.ts: known by its shape, no tool to call and a summary
 * of the conversation asked, or by its words: Claude Code's, Codex's, Continue's) is cut so
 * unless the client said `truncation: "disabled"`. It carries
 * the whole history and asks for its summary: over the window, the backend refused it, the agent
 * could not compact, and every later turn, longer still, was refused too. The session was dead;
 * now the model summarises what fits, and the note says what it did not see.
 *
 * Without the field, a user turn over the window by itself is cut to its head and tail
 * (cutTurnsOverWindow) unless the client said `truncation: "disabled"`: no compaction could make
 * it fit. A prompt over the window whose turns each fit stays the backend's refusal.
 */
import type { ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { compactionTurn } from '../kit/last-turn.js';
import { type CutMarker, cutText, estimateTokens } from '../kit/cut.js';
import { calibratedWindow, messagesBeforeBoundary } from '../kit/overflow.js';
import {
  BYTES_PER_TOKEN,
  CERTAIN_BYTES_PER_TOKEN,
  estimatedPromptTokens,
  jsonBytes,
  messageBytes,
} from '../kit/prompt-bytes.js';
import { type Policy, type PolicyContext, type RequestDecision, PROMPT_OVER_WINDOW } from '../types.js';
import { describeTruncationEffect, TRUNCATION_POLICY, type TruncationEffect } from './effects.js';

/** The note in place of the `count` oldest messages. */
export function leftOutMessagesNote(count: number, why = 'truncation: auto'): string {
  return `[toolproof left out the ${count === 1 ? 'oldest message' : `${count} oldest messages`} of this conversation to fit the model's context window (${why})]`;
}

/** The note's reason for a compaction turn cut without the client's `truncation: "auto"`. */
export const COMPACTION_REASON = 'a compaction over the window';

/**
 * The messages with the oldest past the boundary left out and the note in their place, and how
 * many went (the one cut counted); undefined when none does. `older`: how many messages start before the boundary. The
 * last of those may run past it: it stays when the prompt kept from it fits `fit` (estimated
 * tokens), so a long message is not left out for starting early; past that it goes too. Either
 * way later turns, which only append, leave out the same until the boundary steps on.
 */
export function leaveOutOldest(
  tools: unknown,
  messages: readonly ChatMessage[],
  older: number,
  fit: number,
  why?: string,
): { messages: ChatMessage[]; count: number } | undefined {
  let lead = 0;
  while (
    lead < messages.length &&
    (messages[lead]?.role === 'system' || messages[lead]?.role === 'developer')
  )
    lead++;
  let end = Math.min(older, messages.length - 1);
  // The message that runs past the boundary: whole while what is kept from it fits; past that,
  // when it is long text (a pasted document, the last turn's long question), its head and tail,
  // a quarter of the window, rather than nothing. Left out whole, the turn after a long message
  // lost all of it though the backend had just taken it. Cut from its own text and the window
  // only, it is the same bytes on every later turn until the boundary passes it.
  let straddler: ChatMessage | undefined;
  if (end > lead) {
    const from = [...messages.slice(0, lead), ...messages.slice(end - 1)];
    if (estimatedPromptTokens(tools, from) <= fit) end--;
    else straddler = cutMessage(messages[end - 1], fit);
  }
  // A result whose call is left out goes with it.
  if (straddler === undefined) while (end < messages.length - 1 && messages[end]?.role === 'tool') end++;
  if (end <= lead) return undefined;
  const kept = straddler ? [straddler, ...messages.slice(end)] : messages.slice(end);
  // Left out whole (the one cut says so itself, and counts as degraded).
  const whole = straddler ? end - 1 - lead : end - lead;
  const note: ChatMessage = { role: 'user', content: leftOutMessagesNote(whole, why) };
  return { messages: [...messages.slice(0, lead), ...(whole > 0 ? [note] : []), ...kept], count: end - lead };
}

/** A marker in place of the middle of a long message cut to fit. */
const messageMarker: CutMarker = (left, total, lines) =>
  `[... toolproof left out ${left} of this message's ${total} characters (${lines} line${lines === 1 ? '' : 's'}) to fit the model's context window ...]`;

/**
 * `m` cut to a quarter of the window when it is a user or assistant message of text longer than
 * that (string content, no tool calls); undefined otherwise (it is left out whole).
 */
function cutMessage(m: ChatMessage | undefined, fit: number): ChatMessage | undefined {
  if (!m || (m.role !== 'user' && m.role !== 'assistant') || typeof m.content !== 'string') return undefined;
  if ((m as { tool_calls?: unknown[] }).tool_calls?.length) return undefined;
  const cut = cutText(m.content, Math.max(1, Math.floor(fit / 4)), messageMarker);
  return cut === m.content ? undefined : { ...m, content: cut };
}

/** The marker in place of the middle of a compaction's last turn cut to fit. */
const lastTurnMarker: CutMarker = (left, total, lines) =>
  `[... toolproof left out ${left} of this conversation's ${total} characters (${lines} line${lines === 1 ? '' : 's'}) to fit the model's context window (${COMPACTION_REASON}) ...]`;

/**
 * The share of `keep` tokens each text part of a turn may have: the parts that fit an even share
 * of what the shorter ones leave stay whole, the others are each cut to that share. Undefined
 * when they all fit. One long part beside short ones gets what they leave; two long ones half
 * each (cut to `keep` each, two 13k-token files in a 16k window came to 19k: refused again).
 */
function partShare(tokens: readonly number[], keep: number): number | undefined {
  const sorted = [...tokens].sort((a, b) => a - b);
  let left = keep;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(left / (sorted.length - i));
    if (sorted[i]! > share) return Math.max(1, share);
    left -= sorted[i]!;
  }
  return undefined;
}

/**
 * `m`, a user turn, with its text (a string, or its text parts, sharing the budget: partShare)
 * cut to `keep` tokens with `marker` between each cut text's head and tail; undefined when it is
 * no user turn, has no such text or fits.
 */
function cutUserTurn(m: ChatMessage | undefined, keep: number, marker: CutMarker): ChatMessage | undefined {
  if (m?.role !== 'user') return undefined;
  let content: ChatMessage['content'];
  if (typeof m.content === 'string') {
    const cut = cutText(m.content, keep, marker);
    if (cut === m.content) return undefined;
    content = cut;
  } else if (Array.isArray(m.content)) {
    const isText = (p: unknown): p is { type: 'text'; text: string } =>
      (p as { type?: unknown } | null)?.type === 'text' && typeof (p as { text?: unknown }).text === 'string';
    const tokens: number[] = [];
    for (const p of m.content) if (isText(p)) tokens.push(estimateTokens(p.text));
    const share = partShare(tokens, keep);
    if (share === undefined) return undefined;
    let changed = false;
    content = m.content.map((p) => {
      if (!isText(p)) return p;
      const cut = cutText(p.text, share, marker);
      if (cut === p.text) return p;
      changed = true;
      return { ...p, text: cut };
    }) as ChatMessage['content'];
    if (!changed) return undefined;
  } else return undefined;
  return { ...m, content } as ChatMessage;
}

/**
 * `messages` with the last one, a compaction's user turn, cut to half the window when its text is
 * longer; undefined when it fits or has no such text.
 */
function cutLastTurn(messages: readonly ChatMessage[], fit: number): ChatMessage[] | undefined {
  const last = cutUserTurn(messages.at(-1), Math.max(1, Math.floor(fit / 2)), lastTurnMarker);
  return last ? [...messages.slice(0, -1), last] : undefined;
}

/**
 * `messages` with each user turn that cannot fit the window by itself, with only the tools and the
 * leading system messages beside it, cut to its head and tail (half the window, messageMarker),
 * and how many were; undefined when none is. Such a turn (a user's paste of 22k tokens into a 16k
 * window) was refused on every later turn of agents that keep it in their history (pi, Cline):
 * leaving out older messages, or compacting them, could never make it fit. Known over as
 * kit/overflow.ts knows a prompt: `refused`, or its bytes past CERTAIN_BYTES_PER_TOKEN a token.
 * Refused, a turn is over by the bytes a token the backend counted for this session's text
 * (`bytesPerToken`: PolicyContext.bytesPerToken), else by BYTES_PER_TOKEN of the calibrated
 * `window`, stricter than real tokenizers (English runs ~4 bytes a token): without a count, a
 * paste of 0.75-1x the window was cut where the agent's compaction of the older turns would have
 * kept it whole. Decided and cut from the turn, the tools, the leading system messages, the window
 * and that ratio alone (the session's first count, remembered with the prompt it refused), so
 * every later turn that carries it sends the same bytes (docs/prefix.md, 11). One pass.
 */
export function cutTurnsOverWindow(
  tools: unknown,
  messages: readonly ChatMessage[],
  known: number,
  window: number,
  refused: boolean,
  bytesPerToken?: number,
): { messages: ChatMessage[]; count: number } | undefined {
  let lead = tools === undefined ? 0 : jsonBytes(tools);
  let i = 0;
  for (; i < messages.length; i++) {
    const m = messages[i];
    if (m?.role !== 'system' && m?.role !== 'developer') break;
    lead += messageBytes(m);
  }
  let out: ChatMessage[] | undefined;
  let count = 0;
  for (; i < messages.length; i++) {
    const m = messages[i];
    if (m?.role !== 'user') continue;
    const bytes = lead + messageBytes(m);
    let over: boolean;
    if (!refused) over = bytes > known * CERTAIN_BYTES_PER_TOKEN;
    else if (bytesPerToken === undefined) over = bytes > window * BYTES_PER_TOKEN;
    // Under the count's bound but over the old one: over still when the turn is denser text than
    // prose (CJK, base64, minified JSON), which a ratio counted over the session's text may not be.
    else over = bytes > known * bytesPerToken || (bytes > window * BYTES_PER_TOKEN && !proseLike(m));
    const cut = over ? cutUserTurn(m, Math.max(1, Math.floor(window / 2)), messageMarker) : undefined;
    if (!cut) continue;
    out ??= messages.slice();
    out[i] = cut;
    count++;
  }
  return out ? { messages: out, count } : undefined;
}

/**
 * Whether `m`'s text reads as prose or code by its characters: at least one in 16 whitespace and at
 * most one in 16 past ASCII. A pure function of the turn, so the decision it takes part in is the
 * same on every turn that carries it. One pass over the text, only for a turn between the two
 * bounds.
 */
function proseLike(m: ChatMessage): boolean {
  let length = 0;
  let space = 0;
  let wide = 0;
  const scan = (text: string) => {
    length += text.length;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 10 || c === 9 || c === 13) space++;
      else if (c >= 128) wide++;
    }
  };
  if (typeof m.content === 'string') scan(m.content);
  else if (Array.isArray(m.content))
    for (const p of m.content) if (p?.type === 'text' && typeof p.text === 'string') scan(p.text);
  return space * 16 >= length && wide * 16 <= length;
}

export const truncationPolicy: Policy<TruncationEffect> = {
  name: TRUNCATION_POLICY,
  enabled: () => true,
  describeEffect: describeTruncationEffect,
  onRequest(request, ctx) {
    const asked = request.truncation;
    // A compaction turn is cut unless the client said otherwise; it carries no field to drop.
    const compaction = asked === undefined && compactionTurn(request);
    if (asked !== 'auto' && asked !== 'disabled' && !compaction) return cutOverWindow(request, ctx);
    const { truncation, ...rest } = request;
    const sent = compaction ? request : rest;
    const known = ctx.settings.contextWindow;
    if ((truncation !== 'auto' && !compaction) || !Array.isArray(sent.messages) || !(known > 0))
      return { action: 'continue', request: sent, effects: [] };
    const refused = ctx.refused?.now.has(PROMPT_OVER_WINDOW) === true;
    const window = calibratedWindow(known, ctx.estimateScale);
    const older = messagesBeforeBoundary(sent.tools, sent.messages, known, refused, window);
    // The window as the backend counts (the refusal's scale): a tighter margin left out a long
    // message the backend had just taken whole (it was the last, kept whatever its estimate).
    const why = compaction ? COMPACTION_REASON : undefined;
    const left = older > 0 ? leaveOutOldest(sent.tools, sent.messages, older, window, why) : undefined;
    let messages = left?.messages;
    let count = left?.count ?? 0;
    // A compaction that carries the conversation as the text of its one user turn (opencode's,
    // Kilo's, pi's, Cline's: "<conversation>...</conversation>" and the instructions) has no older
    // message to leave out: that turn is cut to its head and tail, its instructions at either end
    // kept, rather than relayed whole to be refused.
    const last = older > 0 && compaction ? cutLastTurn(messages ?? sent.messages, window) : undefined;
    if (last) {
      messages = last;
      count++;
    }
    if (!messages) return { action: 'continue', request: sent, effects: [] };
    return {
      action: 'continue',
      request: { ...sent, messages },
      effects: [{ policy: TRUNCATION_POLICY, kind: 'messages-left-out', count }],
    };
  },
};

/**
 * A request without the field that is no compaction: its user turns over the window by themselves
 * cut (cutTurnsOverWindow). A prompt whose older messages could be left out to fit stays the
 * backend's refusal, the agent's cue to compact.
 */
function cutOverWindow(
  request: ChatCompletionRequest,
  ctx: PolicyContext,
): RequestDecision<TruncationEffect> {
  const known = ctx.settings.contextWindow;
  if (!(known > 0) || !Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
  const refused = ctx.refused?.now.has(PROMPT_OVER_WINDOW) === true;
  const window = calibratedWindow(known, ctx.estimateScale);
  const cut = cutTurnsOverWindow(request.tools, request.messages, known, window, refused, ctx.bytesPerToken);
  if (!cut) return { action: 'continue', request, effects: [] };
  return {
    action: 'continue',
    request: { ...request, messages: cut.messages },
    effects: [{ policy: TRUNCATION_POLICY, kind: 'turn-cut', count: cut.count }],
  };
}
