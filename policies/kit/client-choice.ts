/**
 * What the client asked for about tool calls, read from its own request (`original`), never
 * from the request as sent: force-tool-use rewrites tool_choice upstream, and the guarantees
 * are owed to the client, not to the rewritten request.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isPlainObject } from './canonical-arguments.js';

export type ClientToolChoice =
  | { kind: 'auto' }
  | { kind: 'none' }
  | { kind: 'required' }
  | { kind: 'named'; name: string };

/**
 * The client's tool_choice. Absent or unknown values read as "auto" (nothing to enforce).
 * A named choice is `{type:"function", function:{name}}` (Chat Completions); the flat
 * `{type:"function", name}` some clients send (Responses API shape) is read too.
 */
export function clientToolChoice(original: ChatCompletionRequest): ClientToolChoice {
  const choice: unknown = original.tool_choice;
  if (choice === 'none' || choice === 'required') return { kind: choice };
  if (isPlainObject(choice)) {
    const fn = choice.function;
    const name = isPlainObject(fn) ? fn.name : choice.name;
    if (typeof name === 'string' && name !== '') return { kind: 'named', name };
  }
  return { kind: 'auto' };
}

/** OpenAI's default is true: only an explicit false limits a turn to one call. */
export function parallelCallsAllowed(original: ChatCompletionRequest): boolean {
  return original.parallel_tool_calls !== false;
}
