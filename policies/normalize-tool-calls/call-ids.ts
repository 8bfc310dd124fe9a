/**
 * Tool-call ids derived without randomness: `call_` + a hash of the response id, the choice and
 * the position, re-salted until unique within the response.
 */
import { base62Hash } from '../kit/short-hash.js';

export function derivedCallId(
  responseId: string,
  choice: number,
  position: number,
  taken: { has(id: string): boolean },
): string {
  let id = `call_${base62Hash(`${responseId}:${choice}:${position}`, 24)}`;
  for (let salt = 1; taken.has(id); salt++)
    id = `call_${base62Hash(`${responseId}:${choice}:${position}#${salt}`, 24)}`;
  return id;
}

/**
 * Whether invalid JSON `text` looks cut off (unclosed string, object or array) rather than
 * malformed: a truncated call is reported as finish_reason "length", not as a model error.
 */
export function looksTruncated(text: string): boolean {
  const stack: string[] = [];
  let inString = false;
  let escaped = false;
  for (const ch of text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') stack.push(ch);
    else if (ch === '}' || ch === ']') {
      const open = stack.pop();
      if (open === undefined || (open === '{') !== (ch === '}')) return false;
    }
  }
  return inString || stack.length > 0 || text.trim() === '';
}
