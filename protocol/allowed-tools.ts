/**
 * tool_choice `allowed_tools` (OpenAI, 2025; chat completions `{type: "allowed_tools",
 * allowed_tools: {mode, tools: [{type: "function", function: {name}}]}}`, Responses `{type:
 * "allowed_tools", mode, tools: [{type: "function", name}]}`): the model may call only the listed
 * tools of those declared, `mode` "auto" or "required". No backend toolproof fronts takes it
 * (vLLM's and llama-server's tool_choice is a string or one named function), and toolproof
 * refused it itself, a 400 on every turn of the session (chat: `Missing required field
 * "tool_choice.function"`; Responses: `tool_choice "allowed_tools" is not supported`).
 *
 * The request it means: the declared tools narrowed to the listed ones (each as declared, in
 * declared order), tool_choice the mode. The pipeline then holds it as for any tool list: forced
 * use, leak recovery and the judge know only the allowed tools, so a call to another never
 * reaches the client. The cost: allowed_tools exists so that the tool list (and the prompt cache)
 * stays the same while the allowed set changes; narrowed, the tools sent upstream change whenever
 * the allowed set does, and the prompt is new from the tools on that turn (docs/prefix.md,
 * exception 5). Pure.
 */
import { ToolproofError } from './errors.js';
import { isObject } from './is-object.js';
import type { ChatCompletionRequest, ToolChoice, ToolDef } from './openai.js';
import { StringSet } from './string-set.js';

/** What an allowed_tools choice asks: the names the model may call, and the mode. */
export interface AllowedTools {
  names: ReadonlySet<string>;
  mode: 'auto' | 'required';
}

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** Whether `choice` is an allowed_tools choice (either API's shape). */
export function isAllowedToolsChoice(choice: unknown): choice is Record<string, unknown> {
  return isObject(choice) && choice.type === 'allowed_tools';
}

/**
 * The names and mode of an allowed_tools choice. `list` and `mode` are where its API keeps them;
 * `nameOf` reads one entry's name (undefined: an entry no upstream tool answers, a hosted one).
 */
export function readAllowedTools(
  list: unknown,
  mode: unknown,
  param: string,
  nameOf: (entry: Record<string, unknown>) => string | undefined,
): AllowedTools {
  if (mode !== 'auto' && mode !== 'required')
    throw invalid(`${param}.mode`, `${param}.mode must be "auto" or "required".`);
  if (!Array.isArray(list)) throw invalid(`${param}.tools`, `${param}.tools must be an array of tools.`);
  // The client's names, of any length (only declared names are capped): a StringSet, as a Set of
  // many long names alike compares each with all the others (protocol/string-set.ts).
  const names = new StringSet();
  list.forEach((entry, i) => {
    if (!isObject(entry)) throw invalid(`${param}.tools.${i}`, `${param}.tools.${i} must be an object.`);
    const name = nameOf(entry);
    if (name !== undefined) names.add(name);
  });
  return { names, mode };
}

/** A declared tool's name: a function's, or a custom tool's (chat's `custom.name`). */
function declaredName(tool: unknown): string | undefined {
  if (!isObject(tool)) return undefined;
  const inner = isObject(tool.function) ? tool.function : isObject(tool.custom) ? tool.custom : undefined;
  return typeof inner?.name === 'string' ? inner.name : undefined;
}

/**
 * The declared tools the choice allows, and the tool_choice that means. A "required" choice that
 * allows none of the declared tools asks for a call no tool can answer: the client's to fix.
 */
export function narrowToAllowed(
  tools: readonly ToolDef[] | undefined,
  allowed: AllowedTools,
  param: string,
): { tools: ToolDef[]; toolChoice: ToolChoice } {
  const kept = (tools ?? []).filter((t) => {
    const name = declaredName(t);
    return name !== undefined && allowed.names.has(name);
  });
  if (kept.length === 0 && allowed.mode === 'required')
    throw invalid(
      `${param}.tools`,
      `${param}.tools must name at least one declared tool when mode is "required".`,
    );
  return { tools: kept, toolChoice: allowed.mode };
}

/**
 * A chat request whose tool_choice is allowed_tools as the request it means (the tools narrowed,
 * tool_choice the mode); undefined for any other tool_choice. Entries are `{type: "function",
 * function: {name}}` or `{type: "custom", custom: {name}}`.
 */
export function narrowChatAllowedTools(request: ChatCompletionRequest): ChatCompletionRequest | undefined {
  const choice: unknown = request.tool_choice;
  if (!isAllowedToolsChoice(choice)) return undefined;
  const param = 'tool_choice.allowed_tools';
  if (!isObject(choice.allowed_tools)) throw invalid(param, `${param} must be an object.`);
  const { tools: list, mode } = choice.allowed_tools;
  const allowed = readAllowedTools(list, mode, param, (entry) => declaredName(entry));
  const narrowed = narrowToAllowed(request.tools, allowed, param);
  return { ...request, tools: narrowed.tools, tool_choice: narrowed.toolChoice };
}
