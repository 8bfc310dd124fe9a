/**
 * The chat completions request schema: what the route validates (wrong types -> 400 naming the
 * field) and what /docs shows. Every object allows additional properties: fields toolproof does
 * not own (vendor extras) pass through untouched.
 */
import { MAX_CHOICES } from '../../../protocol/completion-shape.js';
import { MAX_DECLARED_TOOLS, MAX_TOOL_NAME_CHARS } from '../../../protocol/tools.js';
import { nullable } from '../../routes/schemas.js';

const message = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { type: 'string' },
    content: { anyOf: [{ type: 'string' }, { type: 'array' }, { type: 'null' }] },
    name: { type: 'string' },
    tool_call_id: { type: 'string' },
    tool_calls: nullable({
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          type: { type: 'string' },
          function: { type: 'object', properties: { name: { type: 'string' } } },
        },
      },
    }),
  },
};

const tool = {
  type: 'object',
  // `function` is required of all but custom tools, which carry `custom` instead: checked by
  // translateCustomTools (protocol/chat-custom-tools.ts), with the same 400.
  properties: {
    type: { type: 'string' },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: MAX_TOOL_NAME_CHARS },
        description: { type: 'string' },
        parameters: { type: 'object' },
      },
    },
  },
};

export const chatCompletionBody = {
  $id: 'ChatCompletionRequest',
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string' },
    messages: { type: 'array', items: message },
    tools: nullable({ type: 'array', maxItems: MAX_DECLARED_TOOLS, items: tool }),
    // the deprecated shape of tools (protocol/chat-legacy-functions.ts): each a tool's `function`
    functions: nullable({ type: 'array', maxItems: MAX_DECLARED_TOOLS, items: tool.properties.function }),
    function_call: {
      anyOf: [
        { type: 'string' },
        { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        { type: 'null' },
      ],
    },
    tool_choice: {
      anyOf: [
        { type: 'string' },
        {
          type: 'object',
          properties: {
            type: { type: 'string' },
            function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
          },
        },
      ],
    },
    stream: nullable({ type: 'boolean' }),
    stream_options: nullable({ type: 'object', properties: { include_usage: { type: 'boolean' } } }),
    max_tokens: nullable({ type: 'integer' }),
    max_completion_tokens: nullable({ type: 'integer' }),
    temperature: nullable({ type: 'number' }),
    top_p: nullable({ type: 'number' }),
    // Past MAX_CHOICES (OpenAI's limit) a 400: choices beyond it would be dropped (askedChoicesOf).
    n: nullable({ type: 'integer', minimum: 1, maximum: MAX_CHOICES }),
    // vLLM's extension: best_of sequences generated for the n returned; past MAX_CHOICES a 400, as n.
    best_of: nullable({ type: 'integer', maximum: MAX_CHOICES }),
    parallel_tool_calls: nullable({ type: 'boolean' }),
    response_format: nullable({ type: 'object' }),
  },
  additionalProperties: true,
} as const;
