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

/** A place the user's text names ("... in Tokyo?", "for New York"): the demo's city argument. */
function placeIn(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const m = /\b(?:in|for|at|of)\s+((?:[A-Z][\p{L}'.-]*)(?:\s+[A-Z][\p{L}'.-]*){0,3})/u.exec(
    text.slice(-2000),
  );
  return m?.[1]?.replace(/[.'-]+$/, '');
}

function sampleValue(name: string, schema: Schema, depth: number, userText?: string): unknown {
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
      return depth > 3
        ? []
        : [sampleValue(name, isSchema(schema.items) ? schema.items : {}, depth + 1, userText)];
    case 'object':
      return depth > 3 ? {} : sampleObject(schema, depth + 1, userText);
    case 'null':
      return null;
    default: {
      const place = /location|city|place|town/i.test(name) ? placeIn(userText) : undefined;
      return place ?? STRING_BY_NAME.find(([re]) => re.test(name))?.[1] ?? 'example';
    }
  }
}

function sampleObject(schema: Schema, depth: number, userText?: string): Record<string, unknown> {
  const props = isSchema(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((k): k is string => typeof k === 'string')
    : [];
  const keys = required.length > 0 ? required : Object.keys(props);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const sub = props[key];
    out[key] = sampleValue(key, isSchema(sub) ? sub : {}, depth, userText);
  }
  return out;
}

/**
 * `userText`, the user's last message: a place it names fills a location/city argument (the
 * README's demo asks about several cities; answering Paris for each looked like a mangled call).
 */
export function sampleArguments(parameters: unknown, userText?: string): Record<string, unknown> {
  return isSchema(parameters) ? sampleObject(parameters, 0, userText) : {};
}
