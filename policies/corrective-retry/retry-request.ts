/**
 * Builds the corrective retry request: the sent request + the failed assistant turn + one tool
 * message per call (what was wrong and what to do next; a note for good siblings, so the
 * history stays valid: every call answered). An unparsed leak gets its feedback in a user
 * message (or, when the turn also has calls, appended to the last tool message, because some
 * templates refuse a user message right after a tool message).
 */
import type { ChatCompletionRequest, ChatMessage, ToolCall } from '../../protocol/openai.js';
import { canonicalizeArguments } from '../kit/canonical-arguments.js';
import { base62Hash } from '../kit/short-hash.js';
import { toolNameAlias } from '../kit/tool-name-alias.js';
import type { CallCheck } from './call-checks.js';

/**
 * The replayed call's id in the retry request: 9 alphanumerics (its own when it is so already).
 * Only the upstream reads it (the client gets the retried turn's calls, never these), and
 * Mistral-family templates refuse any other id ("Tool call IDs should be alphanumeric strings
 * with length 9!"): a retry replaying the backend's 32-character id, or a `call_` one, was
 * refused there, configured nineCharIds or not (the retry is not prepared again).
 */
function replayedId(id: unknown, i: number): string {
  if (typeof id === 'string' && /^[A-Za-z0-9]{9}$/.test(id)) return id;
  return base62Hash(`${typeof id === 'string' ? id : ''}\u0000${i}`, 9);
}

/**
 * The name the upstream knows a replayed call's tool by: the client's, or its alias when the tools
 * went under aliases (tool-names: the call came back under the client's name, and a backend that
 * refused that name would refuse the retry, which is not prepared again).
 */
function sentName(sentNames: () => ReadonlySet<unknown>, name: string): string {
  const alias = toolNameAlias(name);
  if (alias === name) return name;
  return sentNames().has(alias) ? alias : name;
}

/**
 * The names of the tools `sent` went with, gathered on first use, once per retry: a scan of the
 * tools per replayed call cost tools x calls (4,096 and 20,000: ~300 ms).
 */
function namesSent(sent: ChatCompletionRequest): () => ReadonlySet<unknown> {
  let names: Set<unknown> | undefined;
  return () => {
    if (names) return names;
    names = new Set();
    for (const t of Array.isArray(sent.tools) ? sent.tools : []) names.add(t?.function?.name);
    return names;
  };
}

export function buildRetryRequest(
  sent: ChatCompletionRequest,
  content: string | null,
  checks: readonly CallCheck[],
  leakFeedback: string | undefined,
): ChatCompletionRequest {
  // Replayed arguments must be valid JSON or the next attempt fails upstream (vLLM 400,
  // llama-server 500); the raw text is quoted in the feedback instead.
  const sentNames = namesSent(sent);
  const calls: ToolCall[] = checks.map((c, i) => ({
    ...c.call,
    id: replayedId(c.call.id, i),
    type: 'function',
    function: {
      name: sentName(sentNames, c.name),
      arguments: canonicalizeArguments(c.call.function?.arguments).text,
    },
  }));
  const assistant: ChatMessage =
    calls.length > 0
      ? { role: 'assistant', content, tool_calls: calls }
      : { role: 'assistant', content: content ?? '' };
  const feedback: ChatMessage[] = checks.map((c, i) => ({
    role: 'tool',
    tool_call_id: calls[i]!.id,
    content: c.feedback,
  }));
  if (leakFeedback !== undefined) {
    const last = feedback[feedback.length - 1];
    if (last) last.content = `${String(last.content)}\n${leakFeedback}`;
    else feedback.push({ role: 'user', content: leakFeedback });
  }
  return { ...sent, messages: [...sent.messages, assistant, ...feedback] };
}
