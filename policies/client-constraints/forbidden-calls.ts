/**
 * A call the client forbade (tool_choice "none") written as text: one JSON object per call,
 * `{"name":"get_weather","arguments":{"city":"Paris"}}`, one per line after the content. The
 * streamed path renders the same calls with the same functions, so both paths agree.
 */
import type { ToolCall } from '../../protocol/openai.js';
import { isPlainObject, tryParseJson } from '../kit/canonical-arguments.js';

/** One call as text; arguments that are not a JSON object are kept as the string they were. */
export function renderCall(name: string, rawArgs: unknown): string {
  let args: unknown = rawArgs;
  if (typeof rawArgs === 'string') {
    const parsed = tryParseJson(rawArgs);
    if (parsed.ok && isPlainObject(parsed.value)) args = parsed.value;
  }
  return JSON.stringify({ name, arguments: args ?? {} });
}

/** What goes between the content so far and the first rendered call. */
export function callTextSeparator(contentSoFar: string): string {
  return contentSoFar === '' || contentSoFar.endsWith('\n') ? '' : '\n';
}

export function renderCalls(calls: ReadonlyArray<{ name: string; args: unknown }>): string {
  return calls.map((c) => renderCall(c.name, c.args)).join('\n');
}

export function appendForbiddenCalls(content: string | null, calls: readonly ToolCall[]): string {
  const base = typeof content === 'string' ? content : '';
  const text = renderCalls(
    calls.map((c) => ({
      name: typeof c.function?.name === 'string' ? c.function.name : '',
      args: c.function?.arguments,
    })),
  );
  return base + callTextSeparator(base) + text;
}
