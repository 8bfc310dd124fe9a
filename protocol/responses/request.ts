/**
 * A Responses API request -> the chat-completions request toolproof's pipeline runs. Pure:
 * every field a stateless chat backend cannot honour is rejected with a TP_ERR_INVALID_FIELD
 * naming it, never silently dropped.
 */
import { ToolproofError } from '../errors.js';
import type { ChatCompletionRequest, JsonObject, ToolChoice, ToolDef } from '../openai.js';
import { inputToMessages } from './items.js';
import type { FunctionTool, ResponsesRequest, ResponsesToolChoice, TextFormat } from './types.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

const STATELESS =
  'toolproof is stateless: it keeps no responses or conversations. Send the whole conversation in `input` (the Agents SDK and most clients do when previous_response_id is not set).';

function toTools(tools: ResponsesRequest['tools']): ToolDef[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((t, i) => {
    if (t.type !== 'function')
      throw invalid(
        `tools[${i}].type`,
        `Tool type "${String(t.type)}" is not supported: toolproof forwards to a self-hosted chat backend, which runs function tools only (hosted tools such as web_search or file_search run on OpenAI's servers).`,
      );
    const f = t as FunctionTool;
    if (typeof f.name !== 'string' || !f.name)
      throw invalid(`tools[${i}].name`, `tools[${i}].name must be a non-empty string.`);
    const def: ToolDef = { type: 'function', function: { name: f.name } };
    if (typeof f.description === 'string') def.function.description = f.description;
    if (f.parameters !== undefined && f.parameters !== null) {
      // Dropped, a non-object would declare a tool without arguments the client never asked for.
      if (typeof f.parameters !== 'object' || Array.isArray(f.parameters))
        throw invalid(`tools[${i}].parameters`, `tools[${i}].parameters must be a JSON schema object.`);
      def.function.parameters = f.parameters;
    }
    if (typeof f.strict === 'boolean') def.function.strict = f.strict;
    return def;
  });
}

function toToolChoice(choice: ResponsesToolChoice | undefined): ToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (typeof choice === 'object' && choice.type === 'function' && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  const kind = typeof choice === 'object' ? String(choice.type) : String(choice);
  throw invalid(
    'tool_choice',
    `tool_choice "${kind}" is not supported: use auto, none, required or {"type":"function","name":...}.`,
  );
}

function toResponseFormat(format: TextFormat | undefined): JsonObject | undefined {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (!format.schema || typeof format.schema !== 'object')
      throw invalid('text.format.schema', 'text.format.schema must be a JSON schema object.');
    const jsonSchema: JsonObject = { name: format.name ?? 'response', schema: format.schema };
    if (typeof format.strict === 'boolean') jsonSchema.strict = format.strict;
    if (typeof format.description === 'string') jsonSchema.description = format.description;
    return { type: 'json_schema', json_schema: jsonSchema };
  }
  throw invalid('text.format.type', `text.format.type "${String(format.type)}" is not supported.`);
}

/** The chat request for a Responses request. Throws TP_ERR_INVALID_FIELD naming the field. */
export function toChatRequest(body: ResponsesRequest): ChatCompletionRequest {
  if (body.previous_response_id != null) throw invalid('previous_response_id', STATELESS);
  if (body.conversation != null) throw invalid('conversation', STATELESS);
  if (body.background === true)
    throw invalid('background', 'Background responses need stored state; toolproof is stateless.');
  if (body.prompt != null)
    throw invalid(
      'prompt',
      'Stored prompt templates live on OpenAI servers; send instructions and input instead.',
    );

  const chat: ChatCompletionRequest = {
    model: body.model,
    messages: inputToMessages(body.input, body.instructions),
  };
  if (chat.messages.length === 0)
    throw invalid('input', 'input is empty: send a string or at least one item.');
  const tools = toTools(body.tools);
  if (tools) chat.tools = tools;
  const toolChoice = toToolChoice(body.tool_choice);
  if (toolChoice) chat.tool_choice = toolChoice;
  if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls;
  const format = toResponseFormat(body.text?.format);
  if (format) chat.response_format = format;
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens;
  if (typeof body.temperature === 'number') chat.temperature = body.temperature;
  if (typeof body.top_p === 'number') chat.top_p = body.top_p;
  // vLLM (gpt-oss and other reasoning templates) reads reasoning_effort on chat completions.
  if (typeof body.reasoning?.effort === 'string') chat.reasoning_effort = body.reasoning.effort;
  if (typeof body.user === 'string') chat.user = body.user;
  if (body.stream === true) {
    chat.stream = true;
    // Usage arrives only when asked for; response.completed must carry it.
    chat.stream_options = { include_usage: true };
  }
  return chat;
}
