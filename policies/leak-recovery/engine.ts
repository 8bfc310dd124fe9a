/**
 * When and how leak-recovery runs the parser engine (parsers/recover.ts), for both of its
 * halves: whether it applies to a request, and the derived call ids.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { fnv1a } from '../../protocol/hash.js';
import type { PolicyContext } from '../types.js';

export function applies(ctx: PolicyContext, sent: ChatCompletionRequest): boolean {
  if (ctx.settings.recovery === 'off') return false;
  return ctx.settings.recovery === 'always' || (Array.isArray(sent.tools) && sent.tools.length > 0);
}

/** Short, stable token of a string, so derived ids look like `call_tp3f9a…_0`. */
export const token = (s: string): string => fnv1a(s).toString(36);

/** Ids are derived from the response id and the choice (policies are pure: no randomness). */
export function idFactory(responseId: string, choice: number): () => string {
  let n = 0;
  const base = `call_tp${token(`${responseId}:${choice}`)}`;
  return () => `${base}_${n++}`;
}
