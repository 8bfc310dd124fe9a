/**
 * Route schemas: they validate what toolproof reads (wrong types -> 400 naming the field) and
 * generate the OpenAPI document at /docs/json. Every object allows additional properties:
 * fields toolproof does not own (vendor extras) pass through untouched.
 */
export const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export const completionBody = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    prompt: {},
    stream: nullable({ type: 'boolean' }),
    max_tokens: nullable({ type: 'integer' }),
  },
  additionalProperties: true,
} as const;

export const embeddingBody = {
  type: 'object',
  required: ['model', 'input'],
  properties: { model: { type: 'string' }, input: {} },
  additionalProperties: true,
} as const;
