/**
 * The answer format the client asked for (chat `response_format`; the Responses `text.format` and
 * the Messages `output_format` / `output_config.format` arrive translated into it), as a fact of
 * the request (ToolSet.answer): the JSON schema the answer must match, and the parameters the
 * synthetic answer tool takes when the turn is forced. The tool's parameters ARE the client's
 * schema; a schema that is not an object schema is wrapped under one key (`answer`), as a tool's
 * parameters must be an object. `json_object` asks for any JSON object. Pure.
 */
import type { ChatCompletionRequest, JsonObject } from '../../protocol/openai.js';
import { isPlainObject } from './canonical-arguments.js';

export interface AnswerFormat {
  kind: 'json_schema' | 'json_object';
  /** The synthetic answer tool's parameters (the client's schema, or it wrapped under `answer`). */
  parameters: JsonObject;
  /** The client's schema sits under `answer` in the parameters: the answer is that key's value. */
  wrapped: boolean;
  /** The client's schema was not a JSON schema object (its `schema` was some other value). */
  bad?: string;
}

/** The key a non-object schema is wrapped under. */
export const WRAP_KEY = 'answer';

const ANY_OBJECT: JsonObject = Object.freeze({ type: 'object' }) as JsonObject;

/** A schema whose instances are always objects (a tool's parameters can be it as it is). */
function isObjectSchema(schema: JsonObject): boolean {
  const t = schema.type;
  return t === 'object' || (Array.isArray(t) && t.length === 1 && t[0] === 'object');
}

export function answerFormatOf(request: ChatCompletionRequest): AnswerFormat | undefined {
  const rf: unknown = request.response_format;
  if (!isPlainObject(rf)) return undefined;
  if (rf.type === 'json_object') return { kind: 'json_object', parameters: ANY_OBJECT, wrapped: false };
  if (rf.type !== 'json_schema') return undefined;
  const js = isPlainObject(rf.json_schema) ? rf.json_schema : undefined;
  const schema: unknown = js?.schema;
  if (schema === undefined || schema === true)
    // No schema (or `true`): any JSON value, wrapped.
    return { kind: 'json_schema', parameters: wrap({}), wrapped: true };
  if (!isPlainObject(schema))
    return {
      kind: 'json_schema',
      parameters: ANY_OBJECT,
      wrapped: false,
      bad: `response_format.json_schema.schema must be a JSON schema object, got ${schema === null ? 'null' : typeof schema}.`,
    };
  if (isObjectSchema(schema as JsonObject))
    return { kind: 'json_schema', parameters: schema as JsonObject, wrapped: false };
  return { kind: 'json_schema', parameters: wrap(schema as JsonObject), wrapped: true };
}

/** Where a schema keeps the subschemas its `$ref`s name from its root (`#/$defs/Item`). */
const DEFINITIONS = ['$defs', 'definitions'] as const;

/**
 * `schema` under WRAP_KEY. Its definitions move up to the wrapper's root: a `$ref` resolves from
 * the root of the document, so `#/$defs/Item` left under `answer` named nothing (Pydantic writes
 * `list[Item]` as an array whose items are such a ref): the backend's grammar and toolproof's
 * own validator could not compile the answer tool's parameters.
 */
function wrap(schema: JsonObject): JsonObject {
  let inner = schema;
  const hoisted: JsonObject = {};
  for (const k of DEFINITIONS)
    if (isPlainObject(schema[k])) {
      if (inner === schema) inner = { ...schema };
      hoisted[k] = schema[k];
      delete inner[k];
    }
  return {
    type: 'object',
    properties: { [WRAP_KEY]: inner },
    required: [WRAP_KEY],
    additionalProperties: false,
    ...hoisted,
  };
}
