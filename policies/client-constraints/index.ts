/**
 * client-constraints (response side, after force-tool-use, before corrective-retry): what the
 * client asked for about tool calls holds on what it receives, whatever the backend did.
 *
 * - tool_choice "none": a structured call the backend returned anyway never reaches the client
 *   as a call (clients such as the Vercel AI SDK throw on a forbidden call). It is written into
 *   content as JSON text, `{"name": ..., "arguments": ...}` one per line, so nothing the model
 *   produced is lost, and finish_reason "tool_calls" becomes "stop". Counted: `forbidden-call`.
 *   (Leaked call text stays text: leak-recovery does not recover under "none".)
 * - parallel_tool_calls false: at most one call per choice; the first is kept, the others are
 *   dropped and counted: `dropped-parallel-call`.
 *
 * A named tool_choice and "required" are judged, not rewritten: corrective-retry's call checks
 * (corrective-retry/call-checks.ts) read the same client choice and re-ask the model ("You must call the
 * tool `X`", "do not answer in prose"). Running before corrective-retry means it judges exactly
 * what the client would get: a bad second call that is dropped here triggers no retry.
 *
 * Both read the client's own request (`original`), never the request as sent upstream.
 */
import type { ChatCompletion, Choice, ToolCall } from '../../protocol/openai.js';
import { passThroughHook, type Policy } from '../types.js';
import { type Constraints, constraintsOf } from './constraints.js';
import { createClientConstraintsStreamHook } from './stream.js';
import { appendForbiddenCalls } from './forbidden-calls.js';
import {
  CLIENT_CONSTRAINTS_POLICY,
  type ClientConstraintsEffect,
  describeClientConstraintsEffect,
} from './effects.js';

function constrainChoice(choice: Choice, c: Constraints, effects: ClientConstraintsEffect[]): Choice {
  const calls: ToolCall[] = Array.isArray(choice.message?.tool_calls) ? choice.message.tool_calls : [];
  if (calls.length === 0) return choice;
  const message = { ...choice.message };
  if (c.noCalls) {
    message.content = appendForbiddenCalls(message.content, calls);
    delete message.tool_calls;
    effects.push({ policy: CLIENT_CONSTRAINTS_POLICY, kind: 'forbidden-call', count: calls.length });
    const finish = choice.finish_reason === 'tool_calls' ? 'stop' : choice.finish_reason;
    return { ...choice, message, finish_reason: finish };
  }
  if (c.singleCall && calls.length > 1) {
    const first = calls[0]!;
    message.tool_calls = [typeof first.index === 'number' ? { ...first, index: 0 } : first];
    effects.push({
      policy: CLIENT_CONSTRAINTS_POLICY,
      kind: 'dropped-parallel-call',
      count: calls.length - 1,
    });
    return { ...choice, message };
  }
  return choice;
}

export const clientConstraintsPolicy: Policy<ClientConstraintsEffect> = {
  name: CLIENT_CONSTRAINTS_POLICY,
  // Always on: these are the client's own instructions, not a harness feature to opt out of.
  enabled: () => true,
  describeEffect: describeClientConstraintsEffect,

  onResponse(response: ChatCompletion, _ctx, _memo, _sent, original) {
    const c = constraintsOf(original);
    if ((!c.noCalls && !c.singleCall) || !Array.isArray(response.choices)) {
      return { action: 'continue', response, effects: [] };
    }
    const effects: ClientConstraintsEffect[] = [];
    const choices = response.choices.map((ch) => constrainChoice(ch, c, effects));
    const changed = choices.some((ch, i) => ch !== response.choices[i]);
    return { action: 'continue', response: changed ? { ...response, choices } : response, effects };
  },

  createStreamHook(_ctx, _memo, _sent, original) {
    const c = constraintsOf(original);
    if (!c.noCalls && !c.singleCall) {
      return passThroughHook();
    }
    return createClientConstraintsStreamHook(CLIENT_CONSTRAINTS_POLICY, c);
  },
};
