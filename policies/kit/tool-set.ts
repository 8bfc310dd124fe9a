/**
 * The request's tool facts, built once per client request (PolicyContext.tools) instead of each
 * policy deriving them from `original` in its own shape: the client's declared function names,
 * whether it declared any, and the name the synthetic answer tool gets (settings.finalAnswerTool,
 * or a variant the client did not declare). Pure; memoized per request object and settings.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { ModelSettings } from '../../protocol/settings.js';
import type { PolicyContext, ToolSet } from '../types.js';
import { answerFormatOf } from './answer-format.js';

/** `preferred`, or `preferred_2`, `_3`... when the client declared a tool of that name. */
export function chooseFinalAnswerName(preferred: string, declared: ReadonlySet<string>): string {
  if (!declared.has(preferred)) return preferred;
  for (let n = 2; ; n++) {
    const candidate = `${preferred}_${n}`;
    if (!declared.has(candidate)) return candidate;
  }
}

/** Whether a request carries at least one tool (of any shape): `tools` is a non-empty array. */
export function hasTools(request: ChatCompletionRequest): boolean {
  return Array.isArray(request.tools) && request.tools.length > 0;
}

export function buildToolSet(request: ChatCompletionRequest, settings: ModelSettings): ToolSet {
  const declared = new Set<string>();
  const tools: unknown = request.tools;
  if (Array.isArray(tools)) {
    for (const t of tools) {
      const name = (t as { function?: { name?: unknown } } | null)?.function?.name;
      if (typeof name === 'string') declared.add(name);
    }
  }
  const answer = answerFormatOf(request);
  return Object.freeze({
    declared,
    any: hasTools(request),
    finalAnswerName: chooseFinalAnswerName(settings.finalAnswerTool, declared),
    ...(answer ? { answer } : {}),
  });
}

const memo = new WeakMap<ChatCompletionRequest, { settings: ModelSettings; set: ToolSet }>();

/**
 * The tool facts of the client's request: the context's when the server built them, else built
 * here once per (request, settings) (policy tests and direct callers).
 */
export function toolSetOf(ctx: PolicyContext, original: ChatCompletionRequest): ToolSet {
  if (ctx.tools) return ctx.tools;
  const hit = memo.get(original);
  if (hit && hit.settings === ctx.settings) return hit.set;
  const set = buildToolSet(original, ctx.settings);
  memo.set(original, { settings: ctx.settings, set });
  return set;
}
