import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChunkChoice,
  Delta,
  ToolCall,
  ToolDef,
} from '../../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS, type ModelSettings } from '../../protocol/settings.js';
import {
  activePolicies,
  createStreamChain,
  runRequestPolicies,
  runResponsePolicies,
} from '../../policies/composition.js';
import { POLICIES } from '../../policies/registry.js';
import type { PolicyContext, StreamHook } from '../../policies/types.js';
import type { PolicyEffect } from '../../policies/registry.js';

export function ctxWith(
  overrides: Partial<PolicyContext> = {},
  settings: Partial<ModelSettings> = {},
): PolicyContext {
  return {
    model: 'm',
    settings: { ...DEFAULT_MODEL_SETTINGS, ...settings },
    requiredRejected: false,
    attempt: 0,
    retriesUsed: 0,
    ...overrides,
  };
}

export function tool(name: string, parameters?: Record<string, unknown>): ToolDef {
  return { type: 'function', function: parameters ? { name, parameters } : { name } };
}

export const weatherTool = tool('get_weather', {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
  additionalProperties: false,
});

export const timeTool = tool('get_time', { type: 'object', properties: {} });

export function request(extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest {
  return { model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra };
}

export function call(id: string, name: string, args: string): ToolCall {
  return { id, type: 'function', function: { name, arguments: args } };
}

export function completion(
  message: { content?: string | null; tool_calls?: ToolCall[] },
  finish: string | null = 'stop',
): ChatCompletion {
  const msg: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: message.content ?? null,
  };
  if (message.tool_calls) msg.tool_calls = message.tool_calls;
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: msg, finish_reason: finish }],
  };
}

export function chunk(delta: Delta, finish: string | null = null, index = 0): ChatCompletionChunk {
  const choice: ChunkChoice = { index, delta, finish_reason: finish };
  return { id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [choice] };
}

/** Runs chunks through a hook and returns everything it emitted, plus the end result. */
export function runHook(hook: StreamHook, chunks: ChatCompletionChunk[]) {
  const out: ChatCompletionChunk[] = [];
  for (const c of chunks) out.push(...hook.onChunk(c));
  const end = hook.onEnd();
  out.push(...end.chunks);
  return { out, end };
}

/** Concatenated content of emitted chunks (choice 0). */
export function streamedContent(chunks: ChatCompletionChunk[]): string {
  return chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
}

/** Tool calls assembled the way an OpenAI client does (choice 0). */
export function streamedCalls(
  chunks: ChatCompletionChunk[],
): Array<{ index: number; id: string; name: string; args: string }> {
  const calls = new Map<number, { index: number; id: string; name: string; args: string }>();
  for (const c of chunks) {
    for (const td of c.choices[0]?.delta.tool_calls ?? []) {
      const cur = calls.get(td.index) ?? { index: td.index, id: '', name: '', args: '' };
      if (td.id) cur.id = td.id;
      if (td.function?.name) cur.name += td.function.name;
      if (td.function?.arguments) cur.args += td.function.arguments;
      calls.set(td.index, cur);
    }
  }
  return [...calls.values()].sort((a, b) => a.index - b.index);
}

export function finishOf(chunks: ChatCompletionChunk[]): string | null {
  for (const c of chunks) {
    const f = c.choices[0]?.finish_reason;
    if (f) return f;
  }
  return null;
}

/** Splits `text` at the given cut points (sorted, deduplicated). */
export function splitAt(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => Math.max(0, Math.min(text.length, c))))].sort((a, b) => a - b);
  const parts: string[] = [];
  let prev = 0;
  for (const p of points) {
    parts.push(text.slice(prev, p));
    prev = p;
  }
  parts.push(text.slice(prev));
  return parts;
}

/**
 * The registry's policies composed as the pipeline composes them (policies/composition.ts): the
 * request side for the memos, then a response attempt whose effects are its context's
 * attemptEffects (what a later policy reads of an earlier one's work).
 */
export function prepare(original: ChatCompletionRequest, ctx: PolicyContext) {
  const policies = activePolicies(POLICIES, ctx.settings);
  const phase = runRequestPolicies(policies, original, ctx);
  if (phase.error) throw new Error('rejected');
  const effects: PolicyEffect[] = [];
  const attemptCtx: PolicyContext = { ...ctx, attemptEffects: effects };
  return { policies, sent: phase.request, memos: phase.memos, effects, ctx: attemptCtx };
}

/** One non-streamed response through the whole response side. */
export function runNonStream(res: ChatCompletion, original: ChatCompletionRequest, ctx: PolicyContext) {
  const { policies, sent, memos, effects, ctx: c } = prepare(original, ctx);
  const d = runResponsePolicies(policies, res, c, memos, sent, original, effects);
  if (d.action === 'retry') return { retry: d.request, reason: d.reason, effects, sent };
  return { response: d.response, effects, sent };
}

/** One streamed response through the production stream chain. */
export function runStream(
  chunks: ChatCompletionChunk[],
  original: ChatCompletionRequest,
  ctx: PolicyContext,
) {
  const { policies, sent, memos, effects, ctx: c } = prepare(original, ctx);
  const chain = createStreamChain(policies, c, memos, sent, original, effects);
  const out: ChatCompletionChunk[] = [];
  for (const chunk of chunks) out.push(...chain.push(chunk));
  const end = chain.end();
  out.push(...end.chunks);
  return { out, retry: end.retry, effects };
}

/** One choice of a stream as an OpenAI client assembles it. */
export function assemble(out: ChatCompletionChunk[], index = 0) {
  let content = '';
  let finish: string | null = null;
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for (const c of out) {
    for (const ch of c.choices) {
      if (ch.index !== index) continue;
      content += ch.delta.content ?? '';
      if (ch.finish_reason) finish = ch.finish_reason;
      for (const td of ch.delta.tool_calls ?? []) {
        const cur = calls.get(td.index) ?? { id: '', name: '', args: '' };
        if (td.id) cur.id = td.id;
        cur.name += td.function?.name ?? '';
        cur.args += td.function?.arguments ?? '';
        calls.set(td.index, cur);
      }
    }
  }
  const sorted = [...calls.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
  return { content, finish, calls: sorted };
}
