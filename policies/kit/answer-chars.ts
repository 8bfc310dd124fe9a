/**
 * The characters an answer holds for judging: content, reasoning, call names and arguments, over
 * every choice. corrective-retry judges no answer past maxHeldBytes (its stream hook counts the
 * same characters as they pass, held-calls-stream.ts), so both sides give the same answer; and
 * force-tool-use hands a final_answer on as a call for it to judge only well within it.
 */
import type { ChatCompletion } from '../../protocol/openai.js';

export function answerChars(response: ChatCompletion): number {
  let n = 0;
  for (const choice of Array.isArray(response.choices) ? response.choices : []) {
    const m = choice?.message;
    if (!m) continue;
    if (typeof m.content === 'string') n += m.content.length;
    if (typeof m.reasoning_content === 'string') n += m.reasoning_content.length;
    for (const call of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      const name = call?.function?.name;
      if (typeof name === 'string') n += name.length;
      const args: unknown = call?.function?.arguments;
      if (typeof args === 'string') n += args.length;
      else if (args !== undefined && args !== null) n += JSON.stringify(args).length;
    }
  }
  return n;
}
