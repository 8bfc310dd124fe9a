/** Plausible arguments for a declared tool, from its JSON schema. Deterministic. */

type Schema = Record<string, unknown>;

const STRING_BY_NAME: Array<[RegExp, string]> = [
  [/location|city|place|town/i, 'Paris'],
  [/country/i, 'France'],
  [/query|search|question|q$/i, 'weather in Paris'],
  [/url|link/i, 'https://example.com'],
  [/path|file/i, 'README.md'],
  [/email/i, 'user@example.com'],
  [/timezone|tz/i, 'UTC'],
  [/date/i, '2026-01-01'],
  [/unit/i, 'celsius'],
  [/lang/i, 'en'],
  [/answer|text|message|content/i, 'Here is the answer.'],
  [/name/i, 'example'],
];

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sampleValue(name: string, schema: Schema, depth: number): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('const' in schema) return schema.const;
  if ('default' in schema) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return depth > 3 ? [] : [sampleValue(name, isSchema(schema.items) ? schema.items : {}, depth + 1)];
    case 'object':
      return depth > 3 ? {} : sampleObject(schema, depth + 1);
    case 'null':
      return null;
    default:
      return STRING_BY_NAME.find(([re]) => re.test(name))?.[1] ?? 'example';
  }
}

function sampleObject(schema: Schema, depth: number): Record<string, unknown> {
  const props = isSchema(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((k): k is string => typeof k === 'string')
    : [];
  const keys = required.length > 0 ? required : Object.keys(props);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const sub = props[key];
    out[key] = sampleValue(key, isSchema(sub) ? sub : {}, depth);
  }
  return out;
}

export function sampleArguments(parameters: unknown): Record<string, unknown> {
  return isSchema(parameters) ? sampleObject(parameters, 0) : {};
}
