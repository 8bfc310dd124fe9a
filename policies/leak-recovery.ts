/**
 * leak-recovery: tool calls the model wrote as text (the backend's --tool-call-parser did not
 * match) are parsed back into real tool_calls by the parser engine (parsers/recover.ts).
 * Runs only when the request declared tools, unless the model's `recovery` is 'always'.
 * Structured calls the backend already returned stay first; recovered ones follow them.
 * Ids are derived from the response id (policies are pure: no randomness).
 */
import type {
  AssistantMessage,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Delta,
  ToolCall,
  ToolCallDelta,
} from '../protocol/openai.js';
import { declaredTools } from '../protocol/tools.js';
import { createRecoveryStream, type RecoveryEvent, recoverMessage } from '../parsers/recover.js';
import type { LeakRecord } from '../parsers/types.js';
import type { Policy, PolicyContext, PolicyEffect, StreamHook } from './types.js';

const NAME = 'leak-recovery';

function applies(ctx: PolicyContext, sent: ChatCompletionRequest): boolean {
  if (ctx.settings.recovery === 'off') return false;
  return ctx.settings.recovery === 'always' || (Array.isArray(sent.tools) && sent.tools.length > 0);
}

/** Short, stable token of a string (FNV-1a), so derived ids look like `call_tp3f9a…_0`. */
function token(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
}

function idFactory(responseId: string, choice: number): () => string {
  let n = 0;
  const base = `call_tp${token(`${responseId}:${choice}`)}`;
  return () => `${base}_${n++}`;
}

const leakEffects = (leaks: readonly LeakRecord[]): PolicyEffect[] =>
  leaks.map((leak) => ({ policy: NAME, kind: 'leak', detail: leak }));

function recoverChoiceMessage(
  message: AssistantMessage,
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
    { content, reasoning: reasoningIn },
    {
      tools: declaredTools(sent),
      parsers: ctx.settings.parsers,
      newId: idFactory(responseId, choiceIndex),
      startsInReasoning: ctx.settings.startsInReasoning,
      maxHeldBytes: ctx.settings.maxHeldBytes,
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

function onResponse(
  response: ChatCompletion,
  ctx: PolicyContext,
  _memo: unknown,
  sent: ChatCompletionRequest,
): ReturnType<NonNullable<Policy['onResponse']>> {
  if (!applies(ctx, sent)) return { action: 'continue', response, effects: [] };
  const effects: PolicyEffect[] = [];
  let changed = false;
  const choices = response.choices.map((choice) => {
    if (!choice?.message) return choice;
    const r = recoverChoiceMessage(choice.message, String(response.id ?? ''), choice.index ?? 0, ctx, sent);
    effects.push(...leakEffects(r.leaks));
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
 * Streaming: choice 0's content and reasoning deltas go through the engine's stream (which
 * holds back only a tail that could still start a marker); recovered calls become OpenAI
 * tool-call deltas numbered after the backend's own structured calls.
 */
function createStreamHook(ctx: PolicyContext, _memo: unknown, sent: ChatCompletionRequest): StreamHook {
  if (!applies(ctx, sent)) {
    return { onChunk: (c) => [c], onEnd: () => ({ chunks: [], effects: [] }) };
  }
  let stream: ReturnType<typeof createRecoveryStream> | undefined;
  let finished = false;
  let reasoningKey: 'reasoning_content' | 'reasoning' = 'reasoning_content';
  let last: Pick<ChatCompletionChunk, 'id' | 'created' | 'model'> | undefined;
  const upstreamIndex = new Map<number, number>();
  const recoveredIndex = new Map<number, number>();
  let nextIndex = 0;
  let recoveredCount = 0;

  const engine = (chunk: ChatCompletionChunk) => {
    if (!stream) {
      stream = createRecoveryStream({
        tools: declaredTools(sent),
        parsers: ctx.settings.parsers,
        newId: idFactory(String(chunk.id ?? ''), 0),
        startsInReasoning: ctx.settings.startsInReasoning,
        maxHeldBytes: ctx.settings.maxHeldBytes,
      });
    }
    return stream;
  };

  const apply = (events: RecoveryEvent[], delta: Delta): void => {
    let content = '';
    let reasoning = '';
    const calls: ToolCallDelta[] = [];
    for (const e of events) {
      if (e.type === 'content') content += e.text;
      else if (e.type === 'reasoning') reasoning += e.text;
      else if (e.type === 'call-start') {
        const idx = nextIndex++;
        recoveredIndex.set(e.index, idx);
        recoveredCount++;
        calls.push({ index: idx, id: e.id, type: 'function', function: { name: e.name, arguments: '' } });
      } else if (e.type === 'call-args') {
        const idx = recoveredIndex.get(e.index);
        if (idx !== undefined) calls.push({ index: idx, function: { arguments: e.fragment } });
      }
    }
    if (content) delta.content = content;
    if (reasoning) delta[reasoningKey] = reasoning;
    if (calls.length > 0) delta.tool_calls = [...(delta.tool_calls ?? []), ...calls];
  };

  return {
    onChunk(chunk) {
      last = { id: chunk.id, created: chunk.created, model: chunk.model };
      if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
      const choices = chunk.choices.map((choice) => {
        if (choice.index !== 0 || finished) return choice;
        const inDelta = choice.delta ?? {};
        if (typeof inDelta.reasoning === 'string' && inDelta.reasoning_content == null)
          reasoningKey = 'reasoning';
        const s = engine(chunk);
        const { content, tool_calls, reasoning_content, reasoning, ...rest } = inDelta;
        const reasoningText = (reasoningKey === 'reasoning' ? reasoning : reasoning_content) as
          | string
          | null
          | undefined;
        const out: Delta = { ...rest };
        // Structured calls from the backend pass through, renumbered into the shared index space.
        if (Array.isArray(tool_calls)) {
          out.tool_calls = tool_calls.map((tc) => {
            let idx = upstreamIndex.get(tc.index);
            if (idx === undefined) {
              idx = nextIndex++;
              upstreamIndex.set(tc.index, idx);
            }
            return { ...tc, index: idx };
          });
        }
        const events = s.push({
          ...(typeof content === 'string' && content ? { content } : {}),
          ...(typeof reasoningText === 'string' && reasoningText ? { reasoning: reasoningText } : {}),
        });
        let finish = choice.finish_reason;
        if (finish != null) {
          events.push(...s.finish());
          finished = true;
        }
        apply(events, out);
        // Keep the role chunk's empty content as the backend sent it.
        if (out.content === undefined && inDelta.role && content !== undefined) out.content = content;
        if (finish === 'stop' && recoveredCount > 0) finish = 'tool_calls';
        return { ...choice, delta: out, finish_reason: finish };
      });
      const c0 = choices.find((c) => c.index === 0);
      const empty =
        c0 &&
        c0.finish_reason == null &&
        Object.keys(c0.delta).length === 0 &&
        chunk.choices.length === 1 &&
        !chunk.usage;
      return empty ? [] : [{ ...chunk, choices }];
    },
    onEnd() {
      const effects = leakEffects(stream?.leaks() ?? []);
      if (!stream || finished || !last) return { chunks: [], effects };
      finished = true;
      const delta: Delta = {};
      apply(stream.finish(), delta);
      const final = leakEffects(stream.leaks());
      if (Object.keys(delta).length === 0) return { chunks: [], effects: final };
      return {
        chunks: [
          { ...last, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }] },
        ],
        effects: final,
      };
    },
  };
}

export const leakRecovery: Policy = {
  name: NAME,
  enabled: (settings) => settings.recovery !== 'off',
  onResponse,
  createStreamHook,
};
