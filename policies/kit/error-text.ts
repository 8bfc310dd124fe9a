/**
 * The head of an upstream error's text, for the policies that learn from a refusal (each matches
 * its own signature in it). Only a head is read: these messages are short, and a huge body must
 * not cost regex time. Pure.
 */
import { isObject } from '../../protocol/is-object.js';

/**
 * The error's message, its first `max` characters, wherever the backend put it (OpenAI's error
 * object, vLLM's legacy top level); a string body as it is; '' when there is none.
 */
export function errorMessageHead(body: unknown, max: number): string {
  if (typeof body === 'string') return body.slice(0, max);
  if (!isObject(body)) return '';
  const inner = isObject(body.error) ? body.error : body;
  const m = inner.message ?? body.detail;
  return typeof m === 'string' ? m.slice(0, max) : '';
}

/** The whole error body as text (a string as it is, else its JSON), its first `max` characters. */
export function errorBodyHead(body: unknown, max: number): string {
  return (typeof body === 'string' ? body : JSON.stringify(body ?? '')).slice(0, max);
}
