/** The `arguments` of an upstream tool call, as the string the API promises (both sides of normalize-tool-calls). */
import type { NormalizeTally } from './effects.js';

/**
 * `arguments` as the string the API promises. Any other JSON value (an object, an array, or a
 * bare `42` or `true` that some backends send) is spelled out as its JSON text, so it is judged
 * (and retried) as arguments like any other, and never reaches a client as a non-string;
 * null or absent means none.
 */
export function argumentsText(args: unknown, tally: NormalizeTally): string {
  if (typeof args === 'string') return args;
  if (args === undefined || args === null) return '';
  tally.add('object-arguments');
  return JSON.stringify(args) ?? '';
}
