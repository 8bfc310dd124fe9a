/**
 * A Responses API request -> the chat-completions request toolproof's pipeline runs. Pure:
 * every field a chat backend cannot honour is rejected with a TP_ERR_INVALID_FIELD naming it,
 * never silently dropped. The conversation a previous_response_id or a conversation id continues
 * comes from the door (`history`).
 */
import { isAllowedToolsChoice, narrowToAllowed, readAllowedTools } from '../allowed-tools.js';
import { ToolproofError } from '../errors.js';
import type { ChatCompletionRequest, JsonObject, ToolChoice } from '../openai.js';
import { StringSet } from '../string-set.js';
import { inputToMessages, type ItemLookup } from './items.js';
import { chatNameOf, type ToolCatalog, translateTools } from './tools.js';
import type { InputItem, ResponsesRequest, ResponsesToolChoice, TextFormat } from './types.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** previous_response_id or conversation with the item store off: nothing was kept to continue. */
const notKept = (param: string) =>
  `${param} cannot be continued: this toolproof keeps no responses or conversations (its Responses store is off: TOOLPROOF_RESPONSES_STORE_MB=0). Send the whole conversation in \`input\` instead.`;

function toToolChoice(
  choice: ResponsesToolChoice | undefined,
  catalog: ToolCatalog,
  dropped: readonly string[],
): ToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (
    typeof choice === 'object' &&
    (choice.type === 'function' || choice.type === 'custom') &&
    typeof choice.name === 'string'
  ) {
    const ns = typeof choice.namespace === 'string' ? choice.namespace : undefined;
    return { type: 'function', function: { name: chatNameOf(catalog, choice.name, ns) } };
  }
  if (
    typeof choice === 'object' &&
    (choice.type === 'local_shell' || choice.type === 'shell' || choice.type === 'apply_patch')
  )
    return { type: 'function', function: { name: choice.type } };
  const kind = typeof choice === 'object' ? String(choice.type) : String(choice);
  // A hosted tool the request declares, left out upstream with the hosted tools (hostedTools:
  // drop): nothing there can call it, so the request goes on as with the tool dropped, the model
  // choosing. Refused, it was a 400 on every turn of the session.
  if (typeof choice === 'object' && dropped.includes(kind)) return 'auto';
  throw invalid(
    'tool_choice',
    `tool_choice "${kind}" is not supported: use auto, none, required, {"type":"function","name":...} or {"type":"custom","name":...}.`,
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

export interface ResponsesTranslation {
  chat: ChatCompletionRequest;
  /** How chat calls map back to the client's tools (namespaces, custom and typed tools). */
  catalog: ToolCatalog;
  /** Hosted tool types left out of the upstream request. */
  dropped: string[];
  /** The 400 the hosted-tools policy answers for them when the model refuses them. */
  refusal?: ToolproofError;
}

/**
 * The chat request and the tool catalog. Throws TP_ERR_INVALID_FIELD naming the field. `history`:
 * the conversation the request's previous_response_id or conversation continues (the door looked
 * it up).
 */
/**
 * What the conversation's items say of the request's settings: the function, custom and
 * namespace tools its `additional_tools` items add (those the request declares itself by name
 * left out: declared once), and its latest `configuration_update` (OpenAI's: it holds until a
 * later one). Both were a 400 naming the item on every later turn. One pass over the items.
 */
function fromItems(
  input: ResponsesRequest['input'],
  history: readonly InputItem[] | undefined,
  declared: ResponsesRequest['tools'],
): { tools: NonNullable<ResponsesRequest['tools']>; update?: Record<string, unknown> } {
  const tools: NonNullable<ResponsesRequest['tools']> = [];
  let update: Record<string, unknown> | undefined;
  // Names not yet length-checked (translateTools does): a StringSet holds long ones apart.
  const seen = new StringSet();
  for (const t of declared ?? []) {
    const name = (t as { name?: unknown } | null)?.name;
    if (typeof name === 'string') seen.add(name);
  }
  const visit = (raw: unknown) => {
    if (raw === null || typeof raw !== 'object') return;
    const item = raw as { type?: unknown; tools?: unknown };
    if (item.type === 'configuration_update') update = raw as Record<string, unknown>;
    if (item.type !== 'additional_tools' || !Array.isArray(item.tools)) return;
    for (const t of item.tools) {
      if (t === null || typeof t !== 'object') continue;
      const { type, name } = t as { type?: unknown; name?: unknown };
      if ((type !== 'function' && type !== 'custom' && type !== 'namespace') || typeof name !== 'string')
        continue;
      if (seen.has(name)) continue;
      seen.add(name);
      tools.push(t as NonNullable<ResponsesRequest['tools']>[number]);
    }
  };
  if (history) for (const raw of history) visit(raw);
  if (Array.isArray(input)) for (const raw of input) visit(raw);
  return update ? { tools, update } : { tools };
}

/** The request with the latest configuration_update's settings where the request sets none. */
function withUpdate(body: ResponsesRequest, update: Record<string, unknown>): ResponsesRequest {
  const reasoning = update.reasoning as { effort?: unknown } | undefined;
  const text = update.text as { format?: unknown } | undefined;
  let out = body;
  if (typeof reasoning?.effort === 'string' && typeof body.reasoning?.effort !== 'string')
    out = { ...out, reasoning: { ...out.reasoning, effort: reasoning.effort } };
  if (text?.format && typeof text.format === 'object' && !body.text?.format)
    out = { ...out, text: { ...out.text, format: text.format as TextFormat } };
  return out;
}

export function translateRequest(
  sent: ResponsesRequest,
  lookup?: ItemLookup,
  history?: readonly InputItem[],
): ResponsesTranslation {
  const later = fromItems(sent.input, history, sent.tools);
  const body = later.update ? withUpdate(sent, later.update) : sent;
  if (body.previous_response_id != null && body.conversation != null)
    throw invalid(
      'conversation',
      'conversation and previous_response_id cannot both be set: a conversation continues its own latest response.',
    );
  if (body.previous_response_id != null && history === undefined)
    throw invalid('previous_response_id', notKept('previous_response_id'));
  if (body.conversation != null && history === undefined)
    throw invalid('conversation', notKept('conversation'));
  // background: true is answered while the request is open (its response is final by the first
  // poll of GET /v1/responses/{id}); before, a 400 on every request of such a client.
  if (body.prompt != null)
    throw invalid(
      'prompt',
      'Stored prompt templates live on OpenAI servers; send instructions and input instead.',
    );

  const { tools, catalog, dropped, refusal } = translateTools(
    later.tools.length > 0 ? [...(body.tools ?? []), ...later.tools] : body.tools,
  );
  const chat: ChatCompletionRequest = {
    model: body.model,
    messages: inputToMessages(body.input, body.instructions, catalog, lookup, history),
  };
  if (chat.messages.length === 0)
    throw invalid('input', 'input is empty: send a string or at least one item.');
  const choice: unknown = body.tool_choice;
  if (isAllowedToolsChoice(choice)) {
    // Only the listed tools, the mode as tool_choice (protocol/allowed-tools.ts); a hosted tool
    // listed is left out with the hosted tools themselves.
    const allowed = readAllowedTools(choice.tools, choice.mode, 'tool_choice', (entry) => {
      const { type, name } = entry;
      if (type === 'local_shell' || type === 'shell' || type === 'apply_patch') return type;
      if ((type !== 'function' && type !== 'custom') || typeof name !== 'string') return undefined;
      return chatNameOf(catalog, name, typeof entry.namespace === 'string' ? entry.namespace : undefined);
    });
    const narrowed = narrowToAllowed(tools, allowed, 'tool_choice');
    if (narrowed.tools.length > 0) chat.tools = narrowed.tools;
    chat.tool_choice = narrowed.toolChoice;
  } else {
    if (tools.length > 0) chat.tools = tools;
    const toolChoice = toToolChoice(body.tool_choice, catalog, dropped);
    if (toolChoice) chat.tool_choice = toolChoice;
  }
  if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls;
  const format = toResponseFormat(body.text?.format);
  if (format) chat.response_format = format;
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens;
  if (typeof body.temperature === 'number') chat.temperature = body.temperature;
  if (typeof body.top_p === 'number') chat.top_p = body.top_p;
  // vLLM (gpt-oss and other reasoning templates) reads reasoning_effort on chat completions.
  if (typeof body.reasoning?.effort === 'string') chat.reasoning_effort = body.reasoning.effort;
  if (typeof body.user === 'string') chat.user = body.user;
  // Read by policies/truncation (the oldest items dropped past the window; "disabled" said, no cut
  // of a compaction or of a turn over the window by itself); never sent upstream.
  if (body.truncation === 'auto' || body.truncation === 'disabled') chat.truncation = body.truncation;
  if (body.stream === true) {
    chat.stream = true;
    // Usage arrives only when asked for; response.completed must carry it.
    chat.stream_options = { include_usage: true };
  }
  return refusal ? { chat, catalog, dropped, refusal } : { chat, catalog, dropped };
}
