/**
 * What a request's last user turn says about the turn as a whole, read from its words: a turn
 * that forbids tools (force-tool-use sends it `auto`), a compaction (truncation leaves out what
 * does not fit the window rather than let the backend refuse it). Bounded whatever the turn's
 * size: at most 32 KB of each of the first 16 text parts (their start and end) of its last four
 * user messages, and as much of each of the first four leading system messages. Pure.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isPlainObject } from './canonical-arguments.js';

/**
 * Words that forbid tools outright. Linear (no nested quantifiers); matched case-insensitively.
 * Sources: Claude Code 2.1's compaction and side-question prompts ("CRITICAL: Respond with TEXT
 * ONLY. Do NOT call any tools.", "Tool calls will be REJECTED"); Qwen Code 0.24's compaction
 * when it shares the session's prompt cache ("Do not call tools; tool execution is disabled for
 * this request."); the same in a user's own words.
 */
const TEXT_ONLY =
  /\b(?:respond|reply|answer) with text only\b|\bdo(?: not|n't) (?:call|use) (?:any )?tools?\b|\btool calls will be rejected\b|\btool execution is disabled\b/i;

/**
 * Words of an agent's compaction turn that declares tools, beside those that forbid them (the
 * wording fallback: a compaction without tools is known by its shape, compactionTurn). Sources:
 * Codex's local compaction prompt (codex-rs core/templates/compact/prompt.md: "You are performing
 * a CONTEXT CHECKPOINT COMPACTION."), the Continue CLI 1.5's, which declares the session's tools
 * ("Please provide a concise summary of our conversation so far, ..."). Claude Code's says text
 * only (TEXT_ONLY), and so does toolproof's own for /v1/responses/compact.
 */
const COMPACTION = /\bcontext checkpoint compaction\b|\bsummary of (?:our|the) conversation so far\b/i;

/**
 * A summary of the conversation asked for: a word of summarising within a clause (no full stop
 * or line break between) of what is summarised. Each alternative's gap is bounded, so a scan
 * costs at most 60 characters a start. Sources (December 2026, each agent's installed CLI):
 * opencode 1.18 and Kilo 7.7 ("You are a context summarization agent", "Create a new anchored
 * summary from the conversation history"), pi 0.73 ("You are a context summarization
 * assistant", "The messages above are a conversation to summarize"), Qwen Code 0.24 and Gemini
 * CLI ("You are the component that summarizes a conversation", "... summarizes internal chat
 * history"), the Continue CLI 1.5 ("Please provide a concise summary of our conversation so
 * far"), Cline 3.0 ("Summarize this session for continuation", "Summarize the provided coding
 * session"), toolproof's own for /v1/responses/compact.
 */
const SUMMARY =
  /\bsummar(?:y|i[sz]e[sd]?|i[sz]ing|i[sz]ation)\b[^.\n]{0,60}?\b(?:conversation|chat|session|history)\b|\b(?:context|conversation|chat|session) summar(?:y|i[sz]ation)\b/i;

/** How much of each text part of the last turn is read: its start and its end. */
const SCAN = 16 * 1024;

function says(pattern: RegExp, text: string): boolean {
  if (text.length <= 2 * SCAN) return pattern.test(text);
  return pattern.test(text.slice(0, SCAN)) || pattern.test(text.slice(-SCAN));
}

/** Does `message` say `pattern` in its text (a string, or one of its first 16 text parts)? */
function messageSays(message: unknown, pattern: RegExp): boolean {
  if (!isPlainObject(message)) return false;
  const content = message.content;
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

/** The request's last message when it is a user turn. */
function lastUserTurn(request: ChatCompletionRequest): unknown {
  const messages = request.messages;
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const last = messages[messages.length - 1];
  return isPlainObject(last) && last.role === 'user' ? last : undefined;
}

/** How many user messages at the end of the request are read as the last user turn. */
const TURN_MESSAGES = 4;

/**
 * Does the request's last user turn (its trailing user messages, up to four, the last first) say
 * `pattern` in one of a message's first 16 text parts? Claude Code 2.1.332 sends a reminder after
 * its compaction ask (the deferred tools' list, a `system` message the Messages door sends up as
 * a user message), so the ask is not always the last message.
 */
function lastUserTurnSays(request: ChatCompletionRequest, pattern: RegExp): boolean {
  const messages = request.messages;
  if (lastUserTurn(request) === undefined) return false;
  for (let k = 1; k <= TURN_MESSAGES && k <= messages.length; k++) {
    const m = messages[messages.length - k];
    if (!isPlainObject(m) || m.role !== 'user') return false;
    if (messageSays(m, pattern)) return true;
  }
  return false;
}

/** Does one of the request's first four leading system (or developer) messages say `pattern`? */
function instructionsSay(request: ChatCompletionRequest, pattern: RegExp): boolean {
  const messages = request.messages;
  if (!Array.isArray(messages)) return false;
  for (let i = 0; i < messages.length && i < 4; i++) {
    const m = messages[i];
    if (!isPlainObject(m) || (m.role !== 'system' && m.role !== 'developer')) return false;
    if (messageSays(m, pattern)) return true;
  }
  return false;
}

/** Does the request leave the model no tool to call (none declared, or `tool_choice: "none"`)? */
function offersNoTools(request: ChatCompletionRequest): boolean {
  const tools = (request as { tools?: unknown }).tools;
  return !Array.isArray(tools) || tools.length === 0 || request.tool_choice === 'none';
}

/** Does the request's last message, a user turn, forbid tools in so many words? */
export function textOnlyTurn(request: ChatCompletionRequest): boolean {
  return lastUserTurnSays(request, TEXT_ONLY);
}

/**
 * Is the request an agent's compaction (it asks for a summary of the conversation in text)? Read
 * from its shape first: no tool to call, and its instructions or its last user turn ask for a
 * summary of the conversation (opencode, Kilo, pi, Qwen Code, Gemini CLI, Continue, Cline: each
 * says so in its own words, none forbids tools in so many words; Qwen Code's asks in its system
 * prompt and ends on "produce the <state_snapshot>"). Then from words: a turn that forbids tools
 * (Claude Code's compaction declares the session's tools; a side question over the window is as
 * dead as a compaction), Codex's local compaction. A turn with tools that only mentions a summary
 * is no compaction: over the window it stays the backend's refusal, the agent's cue to compact.
 */
export function compactionTurn(request: ChatCompletionRequest): boolean {
  if (lastUserTurn(request) === undefined) return false;
  if (offersNoTools(request) && (instructionsSay(request, SUMMARY) || lastUserTurnSays(request, SUMMARY)))
    return true;
  return textOnlyTurn(request) || lastUserTurnSays(request, COMPACTION);
}
