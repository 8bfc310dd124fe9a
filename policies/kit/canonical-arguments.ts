/**
 * Canonical tool-call `arguments`: always a JSON string of an object. One malformed replayed
 * call makes vLLM answer 400 and llama-server 500 ("Failed to parse tool call arguments as
 * JSON") on every later turn, so history arguments are checked, repaired when possible, and
 * otherwise replaced by `{}` with the raw text handed back to the caller to keep.
 *
 * Arguments that already are a JSON object pass through verbatim: re-serializing them would
 * show the model other bytes than it wrote (big integers rounded, `1e400` as null, `-0` as 0,
 * digit keys reordered, whitespace changed) and change the prompt's earlier bytes. Only text
 * that must change is written anew, and then the client's numbers and key order are kept
 * (stringifyJson; a repair's own text as jsonrepair wrote it).
 */
import { jsonrepair } from 'jsonrepair';
import { upstreamJsonProblem } from '../../protocol/completion-shape.js';
import { stringifyJson } from '../../protocol/lossless-json.js';

export type ArgumentsOutcome =
  /** Already a JSON object's text: kept as it is. */
  | 'unchanged'
  /** Missing, null or blank: `{}`. */
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

/**
 * JSON.parse that returns undefined instead of throwing, and instead of paying seconds: arguments
 * (a model's, or a client's history) nested past 512 levels or naming more than 50,000 distinct
 * keys are not parsed (upstreamJsonProblem: 6 MB of nested arrays took 6 s of the loop at each of
 * the places that read them; the Messages door's translation then overflowed the stack, a 500).
 */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (upstreamJsonProblem(text) !== undefined) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function canonicalizeArguments(value: unknown): CanonicalArguments {
  if (value === undefined || value === null) return { text: '{}', outcome: 'canonicalized' };
  if (isPlainObject(value)) return { text: stringifyJson(value), outcome: 'object' };
  if (typeof value !== 'string') {
    return { text: '{}', outcome: 'invalid', raw: JSON.stringify(value) ?? String(value) };
  }
  if (value.trim() === '') return { text: '{}', outcome: 'canonicalized' };

  const parsed = tryParseJson(value);
  if (parsed.ok) {
    if (isPlainObject(parsed.value)) return { text: value, outcome: 'unchanged' };
    // A double-encoded object ("{\"a\":1}") is a common client bug: the inner text is the object.
    if (typeof parsed.value === 'string') {
      const inner = tryParseJson(parsed.value);
      if (inner.ok && isPlainObject(inner.value)) {
        return { text: parsed.value, outcome: 'repaired', raw: value };
      }
    }
    return { text: '{}', outcome: 'invalid', raw: value };
  }
  // Not repaired either: jsonrepair would walk (and recurse into) what the parse refused.
  if (upstreamJsonProblem(value) !== undefined) return { text: '{}', outcome: 'invalid', raw: value };

  try {
    const text = jsonrepair(value);
    if (isPlainObject(JSON.parse(text))) return { text, outcome: 'repaired', raw: value };
  } catch {
    // fall through: nothing usable
  }
  return { text: '{}', outcome: 'invalid', raw: value };
}
