/**
 * vLLM with its structured-output backend set to xgrammar by name (`--structured-outputs-config
 * '{"backend": "xgrammar"}'`, formerly `--guided-decoding-backend xgrammar`; option
 * `guidedBackend: 'xgrammar'`): a schema it must enforce (tool_choice "required" or a named tool,
 * a json_schema response_format) with features xgrammar cannot compile is refused with a 400
 * "The provided JSON schema contains features not supported by xgrammar." The check follows
 * has_xgrammar_unsupported_json_features (vllm/v1/structured_output/backend_xgrammar.py, 2025-26
 * releases); with backend `auto`, vLLM uses guidance for such a schema instead, and nothing is
 * refused.
 */
import type { SimError } from './personality.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const STRING_FORMATS = new Set([
  'email',
  'date',
  'time',
  'date-time',
  'duration',
  'ipv4',
  'ipv6',
  'hostname',
  'uuid',
  'uri',
  'uri-reference',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
]);

function typesOf(o: Obj): Set<string> {
  const t = o.type;
  return new Set(
    typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x) => typeof x === 'string') : [],
  );
}

function unsupported(o: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (Array.isArray(o)) return o.some((v) => unsupported(v, depth + 1));
  if (!isObj(o)) return false;
  const types = typesOf(o);
  if ((types.has('integer') || types.has('number')) && 'multipleOf' in o) return true;
  if (types.has('array') && ['uniqueItems', 'contains', 'minContains', 'maxContains'].some((k) => k in o))
    return true;
  if (types.has('string') && typeof o.format === 'string' && !STRING_FORMATS.has(o.format)) return true;
  if (types.has('string') && ('pattern' in o || 'format' in o) && ('minLength' in o || 'maxLength' in o))
    return true;
  if (types.has('object') && ['patternProperties', 'propertyNames'].some((k) => k in o)) return true;
  return Object.values(o).some((v) => unsupported(v, depth + 1));
}

/** The schemas the request's guided decoding would compile (none when it has none). */
function guidedSchemas(body: Obj): unknown[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter(isObj);
  const params = (t: Obj) => (isObj(t.function) ? t.function.parameters : undefined);
  const choice = body.tool_choice;
  const out: unknown[] = [];
  if (tools.length > 0 && choice === 'required') out.push(...tools.map(params));
  if (tools.length > 0 && isObj(choice) && isObj(choice.function)) {
    const named = tools.find((t) => isObj(t.function) && t.function.name === (choice.function as Obj).name);
    if (named) out.push(params(named));
  }
  const rf = body.response_format;
  if (isObj(rf) && rf.type === 'json_schema' && isObj(rf.json_schema)) out.push(rf.json_schema.schema);
  return out;
}

export function xgrammarError(body: Obj): SimError | null {
  if (!guidedSchemas(body).some((s) => unsupported(s))) return null;
  return {
    status: 400,
    type: 'BadRequestError',
    message: 'The provided JSON schema contains features not supported by xgrammar.',
  };
}
