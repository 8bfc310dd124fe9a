/**
 * Route schemas: they validate what toolproof reads (wrong types -> 400 naming the field) and
 * generate the OpenAPI document at /docs/json. Every object allows additional properties:
 * fields toolproof does not own (vendor extras) pass through untouched.
 */
import { MAX_CHOICES } from '../../protocol/completion-shape.js';
export const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export const completionBody = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    prompt: {},
    stream: nullable({ type: 'boolean' }),
    max_tokens: nullable({ type: 'integer' }),
    // Past MAX_CHOICES (OpenAI's limit, as on chat) a 400: a stream of n choices may carry n times
    // the events of one (eventAllowance), and llama-server takes one only.
    n: nullable({ type: 'integer', minimum: 1, maximum: MAX_CHOICES }),
    // vLLM's best_of: sequences generated on the GPU for the n returned; vLLM bounds it only by
    // n from below. Past MAX_CHOICES a 400, as n (docs/bounds.md).
    best_of: nullable({ type: 'integer', maximum: MAX_CHOICES }),
  },
  additionalProperties: true,
} as const;

export const embeddingBody = {
  type: 'object',
  required: ['model', 'input'],
  properties: { model: { type: 'string' }, input: {} },
  additionalProperties: true,
} as const;
