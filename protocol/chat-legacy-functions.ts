/**
 * Chat completions' deprecated function calling: the request's `functions` and `function_call`
 * (OpenAI's shape before `tools`, still sent by older clients and frameworks), which the backends
 * ignore (vLLM and llama-server read `tools` only: the model was never told of the functions, and
 * nothing toolproof does for tools happened). Declared upstream as the function tools they are,
 * with `parallel_tool_calls: false` (the legacy answer carries one call), and the answer given
 * back in the shape the client asked in: `message.function_call`, `finish_reason:
 * "function_call"`, streamed `delta.function_call`. History in that shape (an assistant
 * `function_call`, a `function` message) is chat-backend-shapes.ts'. Pure.
 */
import { ToolproofError } from './errors.js';
import { isObject } from './is-object.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ToolDef } from './openai.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/**
 * The request with its `functions` as function tools and its `function_call` as `tool_choice`;
 * undefined: it declares no functions (a lone `function_call` is left as it came, as OpenAI
 * ignores it). Both `functions` and `tools`, or a `function_call` naming no declared function,
 * are the client's mistake: a 400 naming the field.
 */
export function translateLegacyFunctions(body: ChatCompletionRequest): ChatCompletionRequest | undefined {
  const raw = body as ChatCompletionRequest & { functions?: unknown; function_call?: unknown };
  const functions = raw.functions;
  if (!Array.isArray(functions) || functions.length === 0) return undefined;
  if (Array.isArray(body.tools) && body.tools.length > 0)
    throw invalid('functions', '"functions" and "tools" cannot both be set: declare the functions as tools.');
  const names = new Set<string>();
  const tools = functions.map((f, i): ToolDef => {
    if (!isObject(f) || typeof f.name !== 'string' || f.name === '')
      throw invalid(`functions.${i}.name`, `functions.${i}.name must be a non-empty string.`);
    names.add(f.name);
    return { type: 'function', function: f as unknown as ToolDef['function'] };
  });
  const { functions: _f, function_call: choice, ...rest } = raw;
  const chat: ChatCompletionRequest = { ...rest, tools, parallel_tool_calls: false };
  if (choice === 'none' || choice === 'auto') chat.tool_choice = choice;
  else if (isObject(choice)) {
    if (typeof choice.name !== 'string' || !names.has(choice.name))
      throw invalid('function_call', 'function_call.name must name a declared function.');
    chat.tool_choice = { type: 'function', function: { name: choice.name } };
  } else if (choice !== undefined && choice !== null)
    throw invalid('function_call', 'function_call must be "none", "auto" or {"name": ...}.');
  return chat;
}

/** The completion in the legacy shape: each choice's call as `function_call`, finish "function_call". */
export function toLegacyFunctionCall(c: ChatCompletion): ChatCompletion {
  return {
    ...c,
    choices: c.choices.map((choice) => {
      const { tool_calls: calls, ...message } = choice.message;
      if (!calls || calls.length === 0) return choice;
      // parallel_tool_calls false went upstream and client-constraints keeps one call per choice
      const first = calls[0]!;
      return {
        ...choice,
        message: {
          ...message,
          function_call: { name: first.function.name, arguments: first.function.arguments },
        },
        finish_reason: choice.finish_reason === 'tool_calls' ? 'function_call' : choice.finish_reason,
      } as typeof choice;
    }),
  };
}

/** The stream's side: the first call's deltas as `delta.function_call`, finish "function_call". */
export function toLegacyFunctionChunk(chunk: ChatCompletionChunk): ChatCompletionChunk | undefined {
  let changed = false;
  const choices = chunk.choices.map((choice) => {
    const deltas = choice.delta.tool_calls;
    const finish = choice.finish_reason === 'tool_calls' ? 'function_call' : choice.finish_reason;
    if ((deltas === undefined || deltas === null) && finish === choice.finish_reason) return choice;
    changed = true;
    const { tool_calls: _, ...delta } = choice.delta;
    const first = deltas?.find((d) => d.index === 0);
    const fn = first?.function;
    const function_call =
      fn === undefined
        ? undefined
        : {
            ...(fn.name !== undefined ? { name: fn.name } : {}),
            arguments: fn.arguments ?? '',
          };
    return {
      ...choice,
      delta: function_call ? { ...delta, function_call } : delta,
      finish_reason: finish,
    } as typeof choice;
  });
  if (!changed) return chunk;
  const empty = choices.every((c) => c.finish_reason == null && Object.keys(c.delta).length === 0);
  return empty && !chunk.usage ? undefined : { ...chunk, choices };
}
