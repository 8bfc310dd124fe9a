/**
 * A call's name that is not a declared tool's, but names exactly one in a way small models slip
 * into: the `functions.` namespace every OpenAI-style chat template renders the tools under
 * (harmony's `to=functions.NAME`, Kimi K2's `functions.NAME:0`; a model copies it into a Hermes
 * or bare JSON call), Gemini's `default_api.` (the namespace its `tool_code` calls are written
 * under: `print(default_api.NAME(…))`), or the declared name in another case (`Read_File`, `GET_WEATHER`). The
 * engine takes it only when the arguments fit that tool's schema (engine.ts); two declared
 * names equal but for case are no match. The improvised reader asks it only for a name in a
 * call's own shape (structured-reader.ts `renamed`), never for a name in prose.
 */
import type { DeclaredTool } from '../types.js';

export type NameRepair = 'name-prefix' | 'name-case';

/** Namespaces a published chat format renders the tools under (`tools.` is no such one: it stays text). */
const PREFIXES = ['functions.', 'default_api.'];

/** Declared names by their lower-case form, per tool map (a request's map is shared by its streams). */
const FOLDED = new WeakMap<ReadonlyMap<string, DeclaredTool>, Map<string, string | null>>();

function folded(tools: ReadonlyMap<string, DeclaredTool>): Map<string, string | null> {
  let m = FOLDED.get(tools);
  if (m === undefined) {
    m = new Map();
    // two declared names with one lower-case form: null (ambiguous)
    for (const name of tools.keys()) {
      const k = name.toLowerCase();
      m.set(k, m.has(k) ? null : name);
    }
    FOLDED.set(tools, m);
  }
  return m;
}

/** The declared tool an undeclared `name` means, and the repair that says how; null if none. */
export function resolveToolName(
  name: string,
  tools: ReadonlyMap<string, DeclaredTool>,
): { name: string; repairs: NameRepair[] } | null {
  const repairs: NameRepair[] = [];
  let n = name;
  const prefix = PREFIXES.find((p) => n.startsWith(p) && n.length > p.length);
  if (prefix !== undefined) {
    n = n.slice(prefix.length);
    repairs.push('name-prefix');
    if (tools.has(n)) return { name: n, repairs };
  }
  const hit = folded(tools).get(n.toLowerCase());
  if (hit === undefined || hit === null || hit === n) return null;
  repairs.push('name-case');
  return { name: hit, repairs };
}
