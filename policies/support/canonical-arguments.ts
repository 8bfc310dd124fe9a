/**
 * Canonical tool-call `arguments`: always a JSON string of an object. One malformed replayed
 * call makes vLLM answer 400 and llama-server 500 ("Failed to parse tool call arguments as
 * JSON") on every later turn, so history arguments are parsed and re-serialized, repaired when
 * possible, and otherwise replaced by `{}` with the raw text handed back to the caller to keep.
 */
import { jsonrepair } from 'jsonrepair';

export type ArgumentsOutcome =
  /** Already canonical. */
  | 'unchanged'
  /** Valid JSON object, re-serialized (whitespace, empty string). */
  | 'canonicalized'
  /** Given as an object instead of a string. */
  | 'object'
  /** Not valid JSON, but jsonrepair produced an object. */
  | 'repaired'
  /** Nothing usable: replaced by `{}`; `raw` keeps the original text. */
  | 'invalid';

export interface CanonicalArguments {
  text: string;
  outcome: ArgumentsOutcome;
  /** The original text when outcome is 'invalid' (or 'repaired'), to be kept somewhere visible. */
  raw?: string;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON.parse that returns undefined instead of throwing. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function canonicalizeArguments(value: unknown): CanonicalArguments {
  if (value === undefined || value === null) return { text: '{}', outcome: 'canonicalized' };
  if (isPlainObject(value)) return { text: JSON.stringify(value), outcome: 'object' };
  if (typeof value !== 'string') {
    return { text: '{}', outcome: 'invalid', raw: JSON.stringify(value) ?? String(value) };
  }
  if (value.trim() === '') return { text: '{}', outcome: 'canonicalized' };

  const parsed = tryParseJson(value);
  if (parsed.ok) {
    if (isPlainObject(parsed.value)) {
      const text = JSON.stringify(parsed.value);
      return { text, outcome: text === value ? 'unchanged' : 'canonicalized' };
    }
    // A double-encoded object ("{\"a\":1}") is a common client bug.
    if (typeof parsed.value === 'string') {
      const inner = tryParseJson(parsed.value);
      if (inner.ok && isPlainObject(inner.value)) {
        return { text: JSON.stringify(inner.value), outcome: 'repaired', raw: value };
      }
    }
    return { text: '{}', outcome: 'invalid', raw: value };
  }

  try {
    const repaired = JSON.parse(jsonrepair(value)) as unknown;
    if (isPlainObject(repaired)) return { text: JSON.stringify(repaired), outcome: 'repaired', raw: value };
  } catch {
    // fall through: nothing usable
  }
  return { text: '{}', outcome: 'invalid', raw: value };
}
