/**
 * The synthetic final_answer tool: its definition, naming, and how its arguments become text.
 * Streamed and non-streamed paths both decode with JsonStringFieldDecoder and share
 * `answerOutcome`, so they agree on every input, cut off or not.
 */
import type { ToolDef } from '../../protocol/openai.js';
import { JsonStringFieldDecoder } from './json-string-stream.js';

export const ANSWER_FIELD = 'answer';

export const FINAL_ANSWER_DESCRIPTION =
  'Reply to the user. This is the ONLY way to send a reply to the user: text written outside a tool ' +
  'call is never shown. Call it once with your complete answer when no other tool call is needed.';

export function finalAnswerTool(name: string): ToolDef {
  return {
    type: 'function',
    function: {
      name,
      description: FINAL_ANSWER_DESCRIPTION,
      parameters: {
        type: 'object',
        properties: {
          [ANSWER_FIELD]: {
            type: 'string',
            description: 'The complete reply to the user, in plain text or Markdown.',
          },
        },
        required: [ANSWER_FIELD],
        additionalProperties: false,
      },
    },
  };
}

/** `preferred`, or `preferred_2`, `preferred_3`, ... when the client already declares that name. */
export function chooseFinalAnswerName(preferred: string, declared: ReadonlySet<string>): string {
  if (!declared.has(preferred)) return preferred;
  for (let n = 2; ; n++) {
    const candidate = `${preferred}_${n}`;
    if (!declared.has(candidate)) return candidate;
  }
}

export interface AnswerOutcome {
  /** Text still to deliver after what the decoder already produced (raw arguments when no answer string was found). */
  extra: string;
  /** The arguments were cut off before the answer (or the object) was complete. */
  truncated: boolean;
  /** No string `answer` field: the raw arguments text is delivered instead (never lose text). */
  raw: boolean;
}

/** What to do once all of a final_answer call's arguments went through `decoder`. */
export function answerOutcome(decoder: JsonStringFieldDecoder, rawArgs: string): AnswerOutcome {
  const s = decoder.state;
  if (s.found) return { extra: '', truncated: !s.valueComplete, raw: false };
  if (s.invalid || s.nonString || s.objectComplete || s.otherKeys) {
    return { extra: rawArgs, truncated: !s.objectComplete && !s.invalid, raw: rawArgs.trim() !== '' };
  }
  // Cut off before the answer began ("{\"ans"): nothing to deliver yet.
  return { extra: '', truncated: true, raw: false };
}

export interface DecodedAnswer {
  text: string;
  truncated: boolean;
  raw: boolean;
}

export function decodeFinalAnswer(rawArgs: unknown): DecodedAnswer {
  if (typeof rawArgs !== 'string') {
    // An object (normalize-tool-calls usually fixed this already).
    if (rawArgs && typeof rawArgs === 'object') {
      const answer = (rawArgs as Record<string, unknown>)[ANSWER_FIELD];
      if (typeof answer === 'string') return { text: answer, truncated: false, raw: false };
      return { text: JSON.stringify(rawArgs), truncated: false, raw: true };
    }
    return { text: '', truncated: false, raw: false };
  }
  const decoder = new JsonStringFieldDecoder(ANSWER_FIELD);
  const text = decoder.push(rawArgs) + decoder.finish();
  const outcome = answerOutcome(decoder, rawArgs);
  return { text: text + outcome.extra, truncated: outcome.truncated, raw: outcome.raw };
}

/** Content written before a final_answer call: whitespace-only content is dropped. */
export function leadingContent(content: unknown): string {
  return typeof content === 'string' && content.trim() !== '' ? content : '';
}

/**
 * Appends one answer to the text so far: a blank line between two non-empty texts unless the
 * first already ends in whitespace. The stream hook applies the same rule incrementally.
 */
export function appendAnswer(base: string, text: string): string {
  if (text === '') return base;
  if (base === '') return text;
  return base + answerSeparator(base) + text;
}

export function answerSeparator(base: string): string {
  return base === '' || /\s$/.test(base) ? '' : '\n\n';
}
