/** The Responses request schema: what the route validates, and what /docs shows. */
import { MAX_DECLARED_TOOLS } from '../../../protocol/tools.js';
import { nullable } from '../../routes/schemas.js';

/** What the route reads; the translation checks the rest (and names the field it rejects). */
export const responsesBody = {
  $id: 'ResponsesRequest',
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
    instructions: nullable({ type: 'string' }),
    // Namespaces' own tools count too: the translation refuses past the cap (responses/tools.ts).
    tools: nullable({
      type: 'array',
      maxItems: MAX_DECLARED_TOOLS,
      items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
    }),
    tool_choice: {
      anyOf: [
        { type: 'string', enum: ['auto', 'none', 'required'] },
        { type: 'object', required: ['type'] },
      ],
    },
    parallel_tool_calls: nullable({ type: 'boolean' }),
    text: nullable({ type: 'object', properties: { format: { type: 'object', required: ['type'] } } }),
    max_output_tokens: nullable({ type: 'integer', minimum: 1 }),
    temperature: nullable({ type: 'number' }),
    top_p: nullable({ type: 'number' }),
    reasoning: nullable({ type: 'object' }),
    metadata: nullable({ type: 'object', additionalProperties: { type: 'string' } }),
    store: nullable({ type: 'boolean' }),
    include: nullable({ type: 'array', items: { type: 'string' } }),
    previous_response_id: nullable({ type: 'string' }),
    stream: nullable({ type: 'boolean' }),
  },
  additionalProperties: true,
} as const;
