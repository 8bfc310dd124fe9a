/**
 * A JSON schema without the keywords vLLM's xgrammar backend refuses to compile ("The provided
 * JSON schema contains features not supported by xgrammar.", 400: vllm/v1/structured_output/
 * backend_xgrammar.py has_xgrammar_unsupported_json_features; the list grew and moved between
 * releases, so the union of them is dropped): `multipleOf`; `uniqueItems`, `contains`,
 * `minContains`, `maxContains`; `format`; `minProperties`, `maxProperties`, `patternProperties`,
 * `propertyNames`, `dependentSchemas`; and `minLength` / `maxLength` beside a `pattern` (xgrammar
 * compiles the pattern and drops the bounds). Pure.
 *
 * Only schema positions are walked (a property *named* `format` stays): the maps
 * (`properties`, `$defs`, `definitions`), the single subschemas and the lists of subschemas.
 * toolproof checks the model's arguments against the client's whole schema all the same (the
 * corrective retry), so what guided decoding no longer enforces is still enforced.
 */

const DROPPED = [
  'multipleOf',
  'uniqueItems',
  'contains',
  'minContains',
  'maxContains',
  'format',
  'minProperties',
  'maxProperties',
  'patternProperties',
  'propertyNames',
  'dependentSchemas',
] as const;

const SUBSCHEMA = [
  'items',
  'additionalProperties',
  'additionalItems',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
] as const;
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items'] as const;
const SUBSCHEMA_MAPS = ['properties', '$defs', 'definitions'] as const;

/** Deeper than this a schema is left as it is (client input: no unbounded recursion). */
const MAX_DEPTH = 64;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `schema` without the refused keywords, and which were dropped (each name once, in the order
 * met); the same object when there was nothing to drop.
 */
export function withoutRefusedKeywords(schema: unknown): { schema: unknown; dropped: string[] } {
  const dropped = new Set<string>();
  const out = strip(schema, dropped, 0);
  return { schema: out, dropped: [...dropped] };
}

function strip(schema: unknown, dropped: Set<string>, depth: number): unknown {
  if (!isObj(schema) || depth > MAX_DEPTH) return schema;
  let out: Obj | undefined;
  const set = (k: string, v: unknown) => {
    out ??= { ...schema };
    if (v === undefined) delete out[k];
    else out[k] = v;
  };
  for (const k of DROPPED)
    if (Object.hasOwn(schema, k)) {
      dropped.add(k);
      set(k, undefined);
    }
  if (Object.hasOwn(schema, 'pattern'))
    for (const k of ['minLength', 'maxLength'])
      if (Object.hasOwn(schema, k)) {
        dropped.add(k);
        set(k, undefined);
      }
  for (const k of SUBSCHEMA) {
    const v = schema[k];
    if (!isObj(v)) continue;
    const next = strip(v, dropped, depth + 1);
    if (next !== v) set(k, next);
  }
  for (const k of SUBSCHEMA_LISTS) {
    const v = schema[k];
    if (!Array.isArray(v)) continue;
    let list: unknown[] | undefined;
    v.forEach((s, i) => {
      const next = strip(s, dropped, depth + 1);
      if (next === s) return;
      list ??= v.slice();
      list[i] = next;
    });
    if (list) set(k, list);
  }
  for (const k of SUBSCHEMA_MAPS) {
    const v = schema[k];
    if (!isObj(v)) continue;
    let map: Obj | undefined;
    for (const [name, s] of Object.entries(v)) {
      const next = strip(s, dropped, depth + 1);
      if (next === s) continue;
      map ??= { ...v };
      map[name] = next;
    }
    if (map) set(k, map);
  }
  return out ?? schema;
}
