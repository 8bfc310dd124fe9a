/**
 * leak-recovery: tool calls the model wrote as text (the backend's --tool-call-parser did not
 * match) are parsed back into real tool_calls by the parser engine (parsers/recover.ts).
 * Runs only when the request declared tools, unless the model's `recovery` is 'always'.
 * With the client's tool_choice "none" nothing is recovered: leaked text stays content, byte for
 * byte, and is only counted (outcome 'suppressed').
 * Structured calls the backend already returned stay first; recovered ones follow them.
 * Ids are derived from the response id (policies are pure: no randomness).
 * The stream half is stream.ts; the effects and what they mean, effects.ts.
 */
import type {
  AssistantMessage,
  ChatCompletion,
  ChatCompletionRequest,
  ToolCall,
} from '../../protocol/openai.js';
import { declaredTools } from '../../protocol/tools.js';
import { upstreamErrorMessage } from '../../protocol/error-body.js';
import { recoverFromErrorText, recoverMessage } from '../../parsers/recover.js';
import type { LeakRecord } from '../../parsers/types.js';
import type { Policy, PolicyContext } from '../types.js';
import { clientToolChoice } from '../kit/client-choice.js';
import { pushAll } from '../../protocol/append-all.js';
import { applies, idFactory, token } from './engine.js';
import {
  describeLeakEffect,
  LEAK_RECOVERY_POLICY,
  type LeakRecoveryEffect,
  leakEffects,
  suppressedEffects,
} from './effects.js';
import { createStreamHook } from './stream.js';
import { leakRecoverySettings, readerStartsInReasoning } from './settings.js';

function recoverChoiceMessage(
  message: AssistantMessage,
  cut: boolean,
  responseId: string,
  choiceIndex: number,
  ctx: PolicyContext,
  sent: ChatCompletionRequest,
): { message: AssistantMessage; added: number; leaks: LeakRecord[] } {
  const content = typeof message.content === 'string' ? message.content : null;
  const reasoningKey =
    typeof message.reasoning === 'string' && message.reasoning_content == null
      ? 'reasoning'
      : 'reasoning_content';
  const reasoningIn = (message[reasoningKey] as string | null | undefined) ?? null;
  if (!content && !reasoningIn) return { message, added: 0, leaks: [] };
  const result = recoverMessage(
    { content, reasoning: reasoningIn, cut },
    {
      tools: declaredTools(sent),
      parsers: ctx.settings.parsers,
      newId: idFactory(responseId, choiceIndex),
      startsInReasoning: readerStartsInReasoning(ctx.settings.startsInReasoning),
      maxHeldBytes: ctx.settings.maxHeldBytes,
      backend: ctx.settings.backend ?? 'unknown',
    },
  );
  const unchanged =
    result.calls.length === 0 &&
    result.leaks.length === 0 &&
    (result.content ?? '') === (content ?? '') &&
    (result.reasoning ?? '') === (reasoningIn ?? '');
  if (unchanged) return { message, added: 0, leaks: [] };
  const recovered: ToolCall[] = result.calls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
  const existing = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const next: AssistantMessage = { ...message, content: result.content };
  if (result.reasoning !== null || reasoningIn !== null) next[reasoningKey] = result.reasoning;
  if (existing.length + recovered.length > 0) next.tool_calls = [...existing, ...recovered];
  return { message: next, added: recovered.length, leaks: result.leaks };
}

/** tool_choice "none", non-streamed: the response is returned untouched; leaks are only counted. */
function suppressLeaks(
  response: ChatCompletion,
  ctx: PolicyContext,
  sent: ChatCompletionRequest,
): ReturnType<NonNullable<Policy<LeakRecoveryEffect>['onResponse']>> {
  const effects: LeakRecoveryEffect[] = [];
  for (const choice of response.choices) {
    const m = choice?.message;
    if (!m) continue;
    const content = typeof m.content === 'string' ? m.content : null;
    const reasoning = typeof m.reasoning_content === 'string' ? m.reasoning_content : m.reasoning;
    const r = recoverMessage(
      {
        content,
        reasoning: typeof reasoning === 'string' ? reasoning : null,
        cut: choice.finish_reason === 'length',
      },
      {
        tools: declaredTools(sent),
        parsers: ctx.settings.parsers,
        newId: idFactory('', choice.index ?? 0),
        startsInReasoning: readerStartsInReasoning(ctx.settings.startsInReasoning),
        maxHeldBytes: ctx.settings.maxHeldBytes,
        backend: ctx.settings.backend ?? 'unknown',
      },
    );
    pushAll(effects, suppressedEffects(r.leaks));
  }
  return { action: 'continue', response, effects };
}

function onResponse(
  response: ChatCompletion,
  ctx: PolicyContext,
  _memo: unknown,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
): ReturnType<NonNullable<Policy<LeakRecoveryEffect>['onResponse']>> {
  if (!applies(ctx, sent)) return { action: 'continue', response, effects: [] };
  if (clientToolChoice(original).kind === 'none') return suppressLeaks(response, ctx, sent);
  const effects: LeakRecoveryEffect[] = [];
  let changed = false;
  const choices = response.choices.map((choice) => {
    if (!choice?.message) return choice;
    const r = recoverChoiceMessage(
      choice.message,
      choice.finish_reason === 'length',
      String(response.id ?? ''),
      choice.index ?? 0,
      ctx,
      sent,
    );
    pushAll(effects, leakEffects(r.leaks));
    if (r.message === choice.message) return choice;
    changed = true;
    const finish =
      r.added > 0 && (choice.finish_reason === 'stop' || choice.finish_reason == null)
        ? 'tool_calls'
        : choice.finish_reason;
    return { ...choice, message: r.message, finish_reason: finish };
  });
  return { action: 'continue', response: changed ? { ...response, choices } : response, effects };
}

/**
 * llama-server answers some chat-parser failures with "Failed to parse input at pos N: <raw
 * model output>" (HTTP 500, or an error event in a stream): the model's call is right there in
 * the error text. When the request declared tools, it becomes a normal completion. Ids derive
 * from the message text (policies are pure: no randomness).
 */
function onUpstreamError(
  body: unknown,
  ctx: PolicyContext,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
): { completion: ChatCompletion; effects: LeakRecoveryEffect[] } | null {
  if (!applies(ctx, sent)) return null;
  const tools = declaredTools(sent);
  if (tools.size === 0) return null;
  const message = upstreamErrorMessage(body, '');
  if (!message) return null;
  const responseId = `chatcmpl-tp${token(message)}`;
  const result = recoverFromErrorText(message, {
    tools,
    parsers: ctx.settings.parsers,
    newId: idFactory(responseId, 0),
    backend: ctx.settings.backend ?? 'unknown',
  });
  if (!result || result.calls.length === 0) return null;
  const completion: ChatCompletion = {
    id: responseId,
    object: 'chat.completion',
    created: 0,
    model: original.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: result.content,
          tool_calls: result.calls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          })),
          ...(result.reasoning ? { reasoning_content: result.reasoning } : {}),
        },
        finish_reason: 'tool_calls',
      },
    ],
  };
  return { completion, effects: leakEffects(result.leaks) };
}

export const leakRecovery: Policy<LeakRecoveryEffect> = {
  name: LEAK_RECOVERY_POLICY,
  settingsSchema: leakRecoverySettings,
  enabled: (settings) => settings.recovery !== 'off',
  describeEffect: describeLeakEffect,
  onResponse,
  createStreamHook,
  onUpstreamError,
};
