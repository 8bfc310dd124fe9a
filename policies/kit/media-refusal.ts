/**
 * What the images and audio policies share to read a backend's refusal of a part its model
 * cannot take (policies/images/refusal.ts, policies/audio/refusal.ts: each its own signatures
 * and part types). Pure.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { errorMessageHead } from './error-text.js';

/** Does an error response (`status`, `body`) say one of `signatures`? Never a status alone. */
export function refusalSays(signatures: readonly RegExp[], status: number, body: unknown): boolean {
  if (status < 400) return false;
  const text = errorMessageHead(body, 1000);
  return text !== '' && signatures.some((p) => p.test(text));
}

/** Does some message of the request carry a content part of one of `types`? */
export function carriesPart(request: ChatCompletionRequest, types: ReadonlySet<string>): boolean {
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return false;
  for (const m of messages) {
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const p of content) if (isObject(p) && typeof p.type === 'string' && types.has(p.type)) return true;
  }
  return false;
}
