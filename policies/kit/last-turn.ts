/**
 * What a request's last user turn says about the turn as a whole, read from its words: a turn
 * that forbids tools (force-tool-use sends it `auto`), a compaction (truncation leaves out what
 * does not fit the window rather than let the backend refuse it). Bounded whatever the turn's
 * size: at most 32 KB of each of its first 16 text parts (its start and its end). Pure.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isPlainObject } from './canonical-arguments.js';

/**
 * Words that forbid tools outright. Linear (no nested quantifiers); matched case-insensitively.
 * Sources: Claude Code 2.1's compaction and side-question prompts ("CRITICAL: Respond with TEXT
 * ONLY. Do NOT call any tools.", "Tool calls will be REJECTED"); the same in a user's own words.
 */
const TEXT_ONLY =
  /\b(?:respond|reply|answer) with text only\b|\bdo not (?:call|use) any tools?\b|\bdon't (?:call|use) any tools?\b|\btool calls will be rejected\b/i;

/**
 * Words of an agent's compaction turn beside those that forbid tools. Source: Codex's local
 * compaction prompt (codex-rs core/templates/compact/prompt.md: "You are performing a CONTEXT
 * CHECKPOINT COMPACTION."), which names no tools. Claude Code's says text only (TEXT_ONLY), and so
 * does toolproof's own for /v1/responses/compact (protocol/responses/compaction.ts).
 */
const COMPACTION = /\bcontext checkpoint compaction\b/i;

/** How much of each text part of the last turn is read: its start and its end. */
const SCAN = 16 * 1024;

function says(pattern: RegExp, text: string): boolean {
  if (text.length <= 2 * SCAN) return pattern.test(text);
  return pattern.test(text.slice(0, SCAN)) || pattern.test(text.slice(-SCAN));
}

/** Does the request's last message, a user turn, say `pattern` in one of its first 16 text parts? */
function lastUserTurnSays(request: ChatCompletionRequest, pattern: RegExp): boolean {
  const messages = request.messages;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  const last = messages[messages.length - 1];
  if (!isPlainObject(last) || last.role !== 'user') return false;
  const content = last.content;
  if (typeof content === 'string') return says(pattern, content);
  if (!Array.isArray(content)) return false;
  for (let i = 0; i < content.length && i < 16; i++) {
    const part = content[i];
    if (
      isPlainObject(part) &&
      part.type === 'text' &&
      typeof part.text === 'string' &&
      says(pattern, part.text)
    )
      return true;
  }
  return false;
}

/** Does the request's last message, a user turn, forbid tools in so many words? */
export function textOnlyTurn(request: ChatCompletionRequest): boolean {
  return lastUserTurnSays(request, TEXT_ONLY);
}

/**
 * Is the request an agent's compaction (its last user turn asks for a summary of the
 * conversation in text)? A turn that forbids tools counts: a side question over the window is as
 * dead as a compaction.
 */
export function compactionTurn(request: ChatCompletionRequest): boolean {
  return textOnlyTurn(request) || lastUserTurnSays(request, COMPACTION);
}
