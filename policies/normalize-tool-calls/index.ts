/**
 * normalize-tool-calls (response side, runs FIRST): structured calls as backends really send
 * them, made well-formed before anything else looks at them:
 * - streamed deltas that all carry index 0 for different calls (a new id, or a new name after
 *   complete arguments, on an already-used index starts a new call): re-indexed 0..n-1;
 * - ids missing or duplicated: replaced by `call_` ids derived from the response id + position
 *   (policies cannot use randomness); ids that are fine are kept as they are;
 * - `type` missing; `arguments` sent as an object; repeated id/name on continuation deltas
 *   (some clients concatenate them) stripped;
 * - finish_reason "tool_calls" on a call cut off by max_tokens (arguments left as an unclosed
 *   JSON prefix) becomes "length"; "tool_calls" without any call becomes "stop" (vLLM's gemma4
 *   parser, issue #53363). "stop" beside calls is left alone: OpenAI itself answers a named
 *   tool_choice that way.
 */
import type { ChatCompletion, Choice, ToolCall } from '../../protocol/openai.js';
import type { Policy } from '../types.js';
import { StringSet } from '../../protocol/string-set.js';
import { isPlainObject, tryParseJson } from '../kit/canonical-arguments.js';
import { argumentsText } from './arguments-text.js';
import { derivedCallId, looksTruncated } from './call-ids.js';
import { EffectTally } from '../kit/effects.js';
import { createNormalizeStreamHook } from './stream.js';
import {
  describeNormalizeEffect,
  NORMALIZE_TOOL_CALLS_POLICY,
  type NormalizeEffect,
  type NormalizeTally,
} from './effects.js';

/**
 * Choices the upstream sent beyond the request's `n`, dropped before the policies run (the
 * request is a contract): counted as this policy's normalization, streamed or not.
 */
export function unaskedChoicesEffect(dropped: number): NormalizeEffect {
  return { policy: NORMALIZE_TOOL_CALLS_POLICY, kind: 'unasked-choice', count: dropped };
}

/** What normalizing changed: effects to report, and whether any `arguments` was not a string. */
interface Changes {
  tally: NormalizeTally;
  rewritten: boolean;
}

function normalizeChoice(choice: Choice, responseId: string, changes: Changes, taken: StringSet): Choice {
  const tally = changes.tally;
  const raw: unknown = choice.message?.tool_calls;
  if (!Array.isArray(raw)) {
    if (choice.finish_reason === 'tool_calls') {
      tally.add('finish-reason');
      return { ...choice, finish_reason: 'stop' };
    }
    return choice;
  }
  let truncated = false;
  const calls: ToolCall[] = raw.map((item: unknown, i) => {
    const obj = isPlainObject(item) ? item : {};
    const fn = isPlainObject(obj.function) ? obj.function : {};
    let id = typeof obj.id === 'string' && obj.id !== '' ? obj.id : undefined;
    if (id === undefined) {
      tally.add('missing-id');
      id = derivedCallId(responseId, choice.index, i, taken);
    } else if (taken.has(id)) {
      tally.add('duplicate-id');
      id = derivedCallId(responseId, choice.index, i, taken);
    }
    taken.add(id);
    if (obj.type !== 'function') tally.add('missing-type');
    if (typeof fn.arguments !== 'string') changes.rewritten = true;
    const text = argumentsText(fn.arguments, tally);
    if (text.trim() !== '' && !tryParseJson(text).ok && looksTruncated(text)) truncated = true;
    return {
      ...obj,
      id,
      type: 'function',
      function: { ...fn, name: typeof fn.name === 'string' ? fn.name : '', arguments: text },
    };
  });
  let finish = choice.finish_reason;
  if (calls.length === 0 && finish === 'tool_calls') {
    tally.add('finish-reason');
    finish = 'stop';
  } else if (truncated && finish !== 'length') {
    tally.add('truncated-arguments');
    finish = 'length';
  }
  if (calls.length === 0) tally.add('empty-tool-calls');
  const message = { ...choice.message };
  if (calls.length > 0) message.tool_calls = calls;
  else delete message.tool_calls;
  return { ...choice, message, finish_reason: finish };
}

export function normalizeToolCalls(response: ChatCompletion): {
  response: ChatCompletion;
  tally: NormalizeTally;
  /** The normalized response differs from the given one (effects, or null arguments made ""). */
  changed: boolean;
} {
  const tally: NormalizeTally = new EffectTally(NORMALIZE_TOOL_CALLS_POLICY);
  const changes: Changes = { tally, rewritten: false };
  if (!Array.isArray(response.choices)) return { response, tally: changes.tally, changed: false };
  const responseId = typeof response.id === 'string' ? response.id : '';
  const choices = response.choices.map((c) => normalizeChoice(c, responseId, changes, new StringSet()));
  const changed = changes.rewritten || changes.tally.size > 0;
  return { response: { ...response, choices }, tally: changes.tally, changed };
}

export const normalizeToolCallsPolicy: Policy<NormalizeEffect> = {
  name: NORMALIZE_TOOL_CALLS_POLICY,
  enabled: () => true,
  describeEffect: describeNormalizeEffect,
  onResponse(response) {
    const { response: normalized, tally, changed } = normalizeToolCalls(response);
    return {
      action: 'continue',
      response: changed ? normalized : response,
      effects: tally.toEffects(),
    };
  },
  createStreamHook() {
    return createNormalizeStreamHook(NORMALIZE_TOOL_CALLS_POLICY);
  },
};
