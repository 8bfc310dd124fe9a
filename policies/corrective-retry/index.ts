/**
 * corrective-retry (response side, runs LAST: it judges what the client would receive, after
 * normalization, leak recovery and final_answer unwrapping). A call naming an undeclared tool,
 * with arguments that are not a JSON object or fail the declared schema, or a tool call written
 * as text no parser could read, makes toolproof re-ask the model once (settings.maxRetries)
 * with feedback saying what was wrong and what to do next. The client's tool_choice is part of
 * the judgement: with a named tool a call to another tool is invalid ('wrong-tool'), with
 * "required" or a named tool a turn without any call is ('prose-when-required'); a final-answer
 * call left unwrapped by force-tool-use ('final-answer-args') is too. Bounded by ctx.retriesUsed: a second
 * failure is returned as it is, with the validation errors as effects, never turned into `{}`.
 *
 * Leaks: the attempt's leaks are a typed fact of the context (kit/attempt-facts.ts: the `leak` records of
 * the attempt's effects before this policy's, PolicyContext.describeEffect); a caller may
 * also pass them in this policy's memo (CorrectiveRetryMemo, `leaks` may be a function).
 */
import type { ChatCompletion } from '../../protocol/openai.js';
import type { Policy } from '../types.js';
import { createHeldCallsStreamHook } from './stream.js';
import { pushAll } from '../../protocol/append-all.js';
import { correctTurn, withoutLeaks } from './judge.js';
import { answerChars } from '../kit/answer-chars.js';
import {
  CORRECTIVE_RETRY_POLICY,
  type CorrectiveRetryEffect,
  describeCorrectiveRetryEffect,
} from './effects.js';
import { correctiveRetrySettings } from './settings.js';

/** What a caller may hand this policy as its memo. */
export type { CorrectiveRetryMemo } from './judge.js';

export const correctiveRetryPolicy: Policy<CorrectiveRetryEffect> = {
  name: CORRECTIVE_RETRY_POLICY,
  retriesUnrecoverable: true,
  describeEffect: describeCorrectiveRetryEffect,
  // With maxRetries 0 the policy still judges calls (effects for the log and metrics) but its
  // stream hook no longer holds tool calls back.
  settingsSchema: correctiveRetrySettings,
  enabled: (settings) => settings.maxRetries > 0 || settings.validateArguments,

  onResponse(response: ChatCompletion, ctx, memo, sent, original) {
    const effects: CorrectiveRetryEffect[] = [];
    const choices = Array.isArray(response.choices) ? response.choices : [];
    // Leaks belong to the response as a whole: judged with the first choice only.
    let first = true;
    const tooLong = answerChars(response) > ctx.settings.maxHeldBytes;
    for (const choice of choices) {
      const message = choice.message ?? { role: 'assistant', content: null };
      const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
      const content = typeof message.content === 'string' ? message.content : null;
      const correction = correctTurn(
        { content, toolCalls, finishReason: choice.finish_reason, ...(tooLong ? { tooLong } : {}) },
        ctx,
        first ? memo : withoutLeaks(memo),
        sent,
        original,
      );
      first = false;
      pushAll(effects, correction.effects);
      if (correction.retry) {
        return {
          action: 'retry',
          request: correction.retry.request,
          reason: correction.retry.reason,
          effects,
          failed: response,
        };
      }
    }
    return { action: 'continue', response, effects };
  },

  createStreamHook(ctx, memo, sent, original) {
    // Holding the turn back only pays when a retry can follow.
    const declaresTools = Array.isArray(original.tools) && original.tools.length > 0;
    const canRetry = declaresTools && ctx.retriesUsed < ctx.settings.maxRetries;
    // Leaks are judged with the first choice only, as onResponse does: judged with every choice,
    // each one walked every effect of the attempt (40k choices: 3 s of event loop).
    let judged = 0;
    return createHeldCallsStreamHook(
      (turn) => correctTurn(turn, ctx, judged++ === 0 ? memo : withoutLeaks(memo), sent, original),
      {
        hold: canRetry,
        maxHeldChars: ctx.settings.maxHeldBytes,
        ...(ctx.discardDecided ? { discardDecided: ctx.discardDecided } : {}),
      },
    );
  },
};
