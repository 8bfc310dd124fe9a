/**
 * The whole response side as the pipeline composes it (registry order, request policies first
 * for their memos, corrective-retry fed the leak records of the same pass), streamed and not.
 */
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { leaksFromEffects } from '../../policies/corrective-retry.js';
import { POLICIES } from '../../policies/registry.js';

// Each side runs the one table in order, skipping policies without a hook for it.
const REQUEST_POLICIES = POLICIES.filter((p) => p.onRequest);
const RESPONSE_POLICIES = POLICIES.filter((p) => p.onResponse);
import type { PolicyContext, PolicyEffect, StreamHook } from '../../policies/types.js';

export function prepare(original: ChatCompletionRequest, ctx: PolicyContext) {
  let sent = original;
  const memos = new Map<string, unknown>();
  for (const p of REQUEST_POLICIES) {
    if (!p.enabled(ctx.settings)) continue;
    const d = p.onRequest!(sent, ctx, original);
    if (d.action !== 'continue') throw new Error('rejected');
    sent = d.request;
    if (d.memo !== undefined) memos.set(p.name, d.memo);
  }
  const effects: PolicyEffect[] = [];
  const force = memos.get('force-tool-use') as { finalAnswerName?: string | null } | undefined;
  memos.set('corrective-retry', {
    leaks: () => leaksFromEffects(effects),
    finalAnswerName: force?.finalAnswerName ?? null,
  });
  return { sent, memos, effects };
}

export function runNonStream(res: ChatCompletion, original: ChatCompletionRequest, ctx: PolicyContext) {
  const { sent, memos, effects } = prepare(original, ctx);
  let cur = res;
  for (const p of RESPONSE_POLICIES) {
    if (!p.enabled(ctx.settings)) continue;
    const d = p.onResponse!(cur, ctx, memos.get(p.name), sent, original);
    effects.push(...d.effects);
    if (d.action === 'retry') return { retry: d.request, reason: d.reason, effects, sent };
    cur = d.response;
  }
  return { response: cur, effects, sent };
}

export function runStream(
  chunks: ChatCompletionChunk[],
  original: ChatCompletionRequest,
  ctx: PolicyContext,
) {
  const { sent, memos, effects } = prepare(original, ctx);
  const hooks: StreamHook[] = RESPONSE_POLICIES.filter((p) => p.enabled(ctx.settings)).map((p) =>
    p.createStreamHook!(ctx, memos.get(p.name), sent, original),
  );
  const from = (start: number, input: ChatCompletionChunk[]) => {
    let cur = input;
    for (let i = start; i < hooks.length; i++) cur = cur.flatMap((c) => hooks[i]!.onChunk(c));
    return cur;
  };
  const out: ChatCompletionChunk[] = [];
  for (const c of chunks) out.push(...from(0, [c]));
  let retry: { request: ChatCompletionRequest; reason: string } | undefined;
  for (let i = 0; i < hooks.length; i++) {
    const end = hooks[i]!.onEnd();
    effects.push(...end.effects);
    if (end.retry && !retry) retry = end.retry;
    out.push(...from(i + 1, end.chunks));
  }
  return { out, retry, effects };
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
