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
 * `opened` (per stream, kept by the caller) holds the calls already opened, as
 * `choice:call` keys: the delta that opens a call must name its function, as a whole message's
 * call must (a stream's later deltas of that call carry only arguments).
 */
export function chunkShapeProblem(chunk: Record<string, unknown>, opened?: Set<string>): string | undefined {
  if (!Array.isArray(chunk.choices)) return undefined;
  for (const [i, choice] of chunk.choices.entries()) {
    if (!isObject(choice)) return `choices[${i}] that is not an object`;
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (!isObject(delta)) return `choices[${i}].delta that is not an object`;
    const calls = delta.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return `choices[${i}].delta.tool_calls that is not an array`;
    for (const [j, call] of calls.entries()) {
      if (!isObject(call)) return `choices[${i}].delta.tool_calls[${j}] that is not an object`;
      if (!opened) continue;
      const key = `${String(choice.index)}:${String(call.index)}`;
      if (opened.has(key)) continue;
      if (!isObject(call.function) || typeof call.function.name !== 'string')
        return `choices[${i}].delta.tool_calls[${j}] without a function name`;
      opened.add(key);
    }
  }
  return undefined;
}

/** A whole stream that ended without a single choice (what a whole response without choices is). */
export const NO_CHOICES = 'a stream without choices';
