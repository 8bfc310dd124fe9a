/**
 * The gate every call read from a shape no format defines goes through (the schema-guided
 * reader in structured-reader.ts, and the variants families meet inside their own envelopes):
 * a name is only a call when it is exactly a declared tool, and its arguments must fit that
 * tool's schema (fitsSchema). Pure; linear in the text.
 */
import type { DeclaredTool } from '../types.js';
import { decodeJsonLenient, isPlainObject } from './lenient-json.js';
import { parsePythonLiteral } from './python-literal.js';
import { decodeStructuredStrings, fitsSchema } from './schema-values.js';

export interface ImprovisedCall {
  name: string;
  args: Record<string, unknown>;
}

type Tools = ReadonlyMap<string, DeclaredTool>;

/** A JSON (or Python literal) object filling the whole text. */
export function decodeObject(text: string): Record<string, unknown> | null {
  const d = decodeJsonLenient(text, { allowMissingClose: false });
  if (d) return isPlainObject(d.value) ? d.value : null;
  const p = parsePythonLiteral(text);
  return p.ok && isPlainObject(p.value) ? p.value : null;
}

/**
 * One value where the schema declares a list of such values (`"domain": "light"` for a
 * `domain: string[]`, Home Assistant intents under small models): the one-element list.
 * Only for a declared array whose `items` type the value already has; nothing else is touched.
 */
function liftScalarsToLists(
  args: Record<string, unknown>,
  tool: DeclaredTool,
): Record<string, unknown> | null {
  const props = tool.parameters?.['properties'];
  if (!isPlainObject(props)) return null;
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(args)) {
    const p = Object.hasOwn(props, k) ? props[k] : undefined;
    if (!isPlainObject(p) || p['type'] !== 'array' || !isPlainObject(p['items'])) continue;
    const item = p['items']['type'];
    const fits =
      (item === 'string' && typeof v === 'string') ||
      ((item === 'number' || item === 'integer') && typeof v === 'number');
    if (!fits || (item === 'integer' && !Number.isInteger(v))) continue;
    out ??= { ...args };
    out[k] = [v];
  }
  return out;
}

/**
 * The call when it names a declared tool AND its arguments fit that tool's schema (after
 * lifting a lone value into the list the schema declares, if that is all that was wrong).
 * Fitting is judged on the values as the engine will type them (`limit="5"` for an integer:
 * decodeStructuredStrings, repair string-value), so the engine and the gate agree.
 */
export function gated(found: ImprovisedCall | null, tools: Tools): ImprovisedCall | null {
  const tool = found ? tools.get(found.name) : undefined;
  if (!found || !tool) return null;
  const fits = (args: Record<string, unknown>) =>
    fitsSchema(decodeStructuredStrings(args, tool) ?? args, tool);
  if (fits(found.args)) return found;
  const lifted = liftScalarsToLists(found.args, tool);
  return lifted && fits(lifted) ? { name: found.name, args: lifted } : null;
}
