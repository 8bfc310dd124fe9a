/** The Messages and count_tokens request schemas: what the routes validate, and what /docs shows. */
import { MAX_DECLARED_TOOLS, MAX_TOOL_NAME_CHARS } from '../../../protocol/tools.js';
import { nullable } from '../../routes/schemas.js';

const messageParam = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['user', 'assistant', 'system'] },
    content: {
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', required: ['type'] } }],
    },
  },
};

const commonProperties = {
  model: { type: 'string', minLength: 1 },
  // Anthropic refuses an empty conversation; a chat backend would be sent nothing to answer.
  messages: { type: 'array', minItems: 1, items: messageParam },
  system: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
  tools: nullable({
    type: 'array',
    maxItems: MAX_DECLARED_TOOLS,
    items: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1, maxLength: MAX_TOOL_NAME_CHARS } },
      // The MCP connector's toolset names its server, not a tool (left out as a hosted tool).
      if: { required: ['type'], properties: { type: { const: 'mcp_toolset' } } },
      else: { required: ['name'] },
    },
  }),
  tool_choice: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
  thinking: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
} as const;

export const messagesBody = {
  $id: 'AnthropicMessagesRequest',
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    ...commonProperties,
    max_tokens: { type: 'integer', minimum: 1 },
    stop_sequences: { type: 'array', items: { type: 'string' } },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    top_k: { type: 'integer' },
    stream: { type: 'boolean' },
    metadata: { type: 'object' },
  },
  additionalProperties: true,
} as const;

export const countTokensBody = {
  $id: 'AnthropicCountTokensRequest',
  type: 'object',
  required: ['model', 'messages'],
  properties: commonProperties,
  additionalProperties: true,
} as const;
