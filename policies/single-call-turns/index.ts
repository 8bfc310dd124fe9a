/**
 * single-call-turns (request side): chat templates that take one tool call per assistant message
 * refuse a history with parallel calls. Meta's Llama 3.1-3.3 template raises "This model only
 * supports single tool-calls at once!" (llama-server answers it as a 400 on the whole request),
 * and the agent sends that message again on every later turn: one turn with two calls (an agent's
 * parallel reads, two calls read back from leaked text, a session begun on another model) ended
 * the session. Once the upstream refused that way (Policy.refusal: the request is prepared again
 * and sent once more; the fact is remembered per upstream and model), each assistant message with
 * several calls goes as one message per call, each followed by its own result:
 *
 *   assistant [c1, c2], tool c1, tool c2  ->  assistant [c1], tool c1, assistant [c2], tool c2
 *
 * The message's content and reasoning stay on the first; the calls keep their order, ids and
 * arguments; each result stays the client's, moved after its call (a result that answers none of
 * the message's calls stays where it was). Nothing is invented or lost. The split is a function
 * of the message and the results after it, so every turn sends the same bytes for the same
 * history (docs/prefix.md, exception 7: from the refused turn on, the prompt is rewritten from the
 * first such message). Runs after history-repair, which gives every call its result.
 */
import { pushAll } from '../../protocol/append-all.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { StringMap, StringSet } from '../../protocol/string-set.js';
import { type Policy, wasRefused } from '../types.js';
import {
  describeSingleCallTurnsEffect,
  SINGLE_CALL_TURNS_POLICY,
  type SingleCallTurnsEffect,
} from './effects.js';
import { errorBodyHead } from '../kit/error-text.js';

/** The refusal's fact: the template takes one tool call per assistant message. */
const SINGLE_CALL_FACT = 'single-tool-calls';

/** Llama 3.x's raise_exception text, as llama-server's 400 carries it (first 2,000 characters). */
const SINGLE_CALLS = /only supports single tool-calls/i;

function refusesParallelCalls(status: number, body: unknown): boolean {
  if (status !== 400 && status !== 500) return false;
  return SINGLE_CALLS.test(errorBodyHead(body, 2000));
}

/** `messages` with every assistant message of several calls split, and how many were; linear. */
export function splitParallelCalls(messages: readonly ChatMessage[]): {
  messages: ChatMessage[];
  split: number;
} {
  const out: ChatMessage[] = [];
  let split = 0;
  let i = 0;
  while (i < messages.length) {
    const m = messages[i]!;
    i++;
    const calls = m?.role === 'assistant' && Array.isArray(m.tool_calls) ? m.tool_calls : undefined;
    if (!calls || calls.length < 2) {
      out.push(m);
      continue;
    }
    // The results right after it, by call id (the first of each id; others stay in order).
    // A StringSet and a StringMap: the client's ids, which V8 hashes by their length alone past
    // 16,383 characters (1,000 ids of 20 KB alike but for their ends: every one compared with
    // all the others).
    const ids = new StringSet();
    for (const c of calls) if (typeof c?.id === 'string') ids.add(c.id);
    const results = new StringMap<ChatMessage>();
    const rest: ChatMessage[] = [];
    while (i < messages.length && messages[i]?.role === 'tool') {
      const r = messages[i]!;
      const id = r.tool_call_id;
      if (typeof id === 'string' && !results.has(id) && ids.has(id)) results.set(id, r);
      else rest.push(r);
      i++;
    }
    split++;
    calls.forEach((call, k) => {
      out.push(
        k === 0 ? { ...m, tool_calls: [call] } : { role: 'assistant', content: null, tool_calls: [call] },
      );
      const r = typeof call?.id === 'string' ? results.get(call.id) : undefined;
      if (r) out.push(r);
    });
    pushAll(out, rest);
  }
  return { messages: out, split };
}

export const singleCallTurnsPolicy: Policy<SingleCallTurnsEffect> = {
  name: SINGLE_CALL_TURNS_POLICY,
  // Always on: it acts only once the upstream refused parallel calls (ctx.refused).
  enabled: () => true,
  describeEffect: describeSingleCallTurnsEffect,
  refusal: {
    fact: SINGLE_CALL_FACT,
    decision: 'parallel-calls-refused',
    refused: (status, body) => refusesParallelCalls(status, body),
    describe: (status) =>
      `the upstream's chat template takes one tool call per assistant message (status ${status}): sent again with each call in its own message, followed by its result`,
  },
  onRequest(request, ctx) {
    if (!wasRefused(ctx, SINGLE_CALL_FACT) || !Array.isArray(request.messages))
      return { action: 'continue', request, effects: [] };
    const { messages, split } = splitParallelCalls(request.messages);
    if (split === 0) return { action: 'continue', request, effects: [] };
    return {
      action: 'continue',
      request: { ...request, messages },
      effects: [{ policy: SINGLE_CALL_TURNS_POLICY, kind: 'split-parallel-calls', count: split }],
    };
  },
};
