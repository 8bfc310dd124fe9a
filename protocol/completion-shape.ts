/**
 * Is an upstream's non-streamed completion shaped so that toolproof can read it? Pure. The
 * pipeline and every front door's translation index into choices, messages and tool calls; a
 * backend (or a proxy in front of it) that sends `"choices":[null]` or `"tool_calls":"x"` must
 * become a 502 naming the field, not a TypeError answered as toolproof's own 500. Lenient
 * where the rest of toolproof already copes (null entries in tool_calls, arguments as an
 * object, odd content types): only what would throw is refused.
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first field toolproof cannot read, as a sentence fragment, or undefined when all is readable. */
export function completionShapeProblem(completion: unknown): string | undefined {
  if (!isObject(completion) || !Array.isArray(completion.choices) || completion.choices.length === 0)
    return 'a response without choices';
  for (const [i, choice] of completion.choices.entries()) {
    if (!isObject(choice)) return `choices[${i}] that is not an object`;
    const message = choice.message;
    if (message === undefined) continue;
    if (!isObject(message)) return `choices[${i}].message that is not an object`;
    const calls = message.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return `choices[${i}].message.tool_calls that is not an array`;
    for (const [j, call] of calls.entries()) {
      if (call === null) continue;
      if (!isObject(call) || !isObject(call.function) || typeof call.function.name !== 'string')
        return `choices[${i}].message.tool_calls[${j}] without a function name`;
    }
  }
  return undefined;
}

/**
 * The same for one streamed chunk: its choices, deltas and tool-call deltas are indexed
 * into by every stream hook and translator. A chunk without choices (usage, an error) passes.
 * `calls` (per stream, kept by the caller) holds the calls already opened, as `choice:call`
 * keys, created at the first call: the delta that opens a call must name its function, as a
 * whole message's call must (a stream's later deltas of that call carry only arguments).
 */
export function chunkShapeProblem(chunk: Record<string, unknown>, calls?: OpenedCalls): string | undefined {
  if (!Array.isArray(chunk.choices)) return undefined;
  for (const [i, choice] of chunk.choices.entries()) {
    if (!isObject(choice)) return `choices[${i}] that is not an object`;
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (!isObject(delta)) return `choices[${i}].delta that is not an object`;
    const deltas = delta.tool_calls;
    if (deltas === undefined || deltas === null) continue;
    if (!Array.isArray(deltas)) return `choices[${i}].delta.tool_calls that is not an array`;
    for (const [j, call] of deltas.entries()) {
      if (!isObject(call)) return `choices[${i}].delta.tool_calls[${j}] that is not an object`;
      if (!calls) continue;
      const key = `${String(choice.index)}:${String(call.index)}`;
      if (calls.opened?.has(key)) continue;
      if (!isObject(call.function) || typeof call.function.name !== 'string')
        return `choices[${i}].delta.tool_calls[${j}] without a function name`;
      (calls.opened ??= new Set()).add(key);
    }
  }
  return undefined;
}

/** Where a stream keeps the calls it opened (a Set only once there is a call). */
export interface OpenedCalls {
  opened?: Set<string>;
}

/** A whole stream that ended without a single choice (what a whole response without choices is). */
export const NO_CHOICES = 'a stream without choices';
