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

/**
 * The synthetic tool, one frozen object per name: every forced request used to carry its own
 * copy (about 0.4 KB held by each open stream). Names are few (the configured one, or it with a
 * `_2`, `_3` suffix), and the table is bounded all the same.
 */
const finalAnswerTools = new Map<string, ToolDef>();
const MAX_CACHED_TOOLS = 64;

export function finalAnswerTool(name: string): ToolDef {
  const cached = finalAnswerTools.get(name);
  if (cached) return cached;
  const def = deepFreeze<ToolDef>({
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
  });
  if (finalAnswerTools.size < MAX_CACHED_TOOLS) finalAnswerTools.set(name, def);
  return def;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** `preferred`, or `preferred_2`, `preferred_3`, ... when the client already declares that name. */
export { chooseFinalAnswerName } from '../kit/tool-set.js';

export interface AnswerOutcome {
  /** Text still to deliver after what the decoder already produced (raw arguments when no answer string was found). */
  extra: string;
  /** The arguments were cut off before the answer (or the object) was complete. */
  truncated: boolean;
  /** No answer string: the raw arguments text is delivered instead (never lose text). */
  raw: boolean;
  /**
   * The complete arguments hold no answer by the rule below: an invalid call, for corrective
   * retry while one can follow. `extra`/`raw` say what is delivered once retries are spent.
   */
  invalid: boolean;
}

/**
 * The rule, applied by one decoder (firstStringKey) on both paths: the answer is the string
 * value of `answer`, or else of the FIRST key when that value is a string, whatever the key is
 * called (`{"response": "It is sunny"}`), decoded live from its first character. An answer under
 * another key counts only when it is the object's only key: a second key makes the call invalid
 * (the text already decoded stays the answer once retries are spent; it may already have been
 * streamed). No answer string at all in complete (or non-JSON) arguments: invalid too, and the
 * raw arguments are the last resort. Cut-off arguments are never invalid: they are delivered as
 * far as they go, marked truncated (a retry would be cut by the same max_tokens).
 */
export function answerOutcome(decoder: JsonStringFieldDecoder, rawArgs: string): AnswerOutcome {
  const s = decoder.state;
  if (s.found) {
    const invalid = s.alias !== undefined && (s.keys > 1 || s.invalid);
    return { extra: '', truncated: !s.valueComplete, raw: false, invalid };
  }
  if (s.invalid || s.nonString || s.objectComplete || s.otherKeys) {
    const complete = s.objectComplete || s.invalid;
    return { extra: rawArgs, truncated: !complete, raw: rawArgs.trim() !== '', invalid: complete };
  }
  // Cut off before the answer began ("{\"ans"): nothing to deliver yet.
  return { extra: '', truncated: true, raw: false, invalid: false };
}

export function createAnswerDecoder(): JsonStringFieldDecoder {
  return new JsonStringFieldDecoder(ANSWER_FIELD, { firstStringKey: true });
}

export interface DecodedAnswer {
  text: string;
  truncated: boolean;
  raw: boolean;
  invalid: boolean;
  /** The key the answer came from when it was not `answer`. */
  field?: string;
  /** A schema answer (schema-answer.ts): what the check found. */
  outcome?: 'valid' | 'invalid' | 'not-json' | 'unchecked';
}

export function decodeFinalAnswer(rawArgs: unknown): DecodedAnswer {
  if (typeof rawArgs !== 'string') {
    // An object (normalize-tool-calls usually fixed this already): decoded as its JSON text.
    if (rawArgs && typeof rawArgs === 'object') return decodeFinalAnswer(JSON.stringify(rawArgs));
    return { text: '', truncated: false, raw: false, invalid: true };
  }
  const plain = plainAnswer(rawArgs);
  if (plain !== undefined) return { text: plain, truncated: false, raw: false, invalid: false };
  return decodeByCharacters(rawArgs);
}

/** decodeFinalAnswer without the plain shortcut: the character decoder every other input takes. */
export function decodeByCharacters(rawArgs: string): DecodedAnswer {
  const decoder = createAnswerDecoder();
  const text = decoder.push(rawArgs) + decoder.finish();
  const outcome = answerOutcome(decoder, rawArgs);
  const field = decoder.state.alias;
  return {
    text: text + outcome.extra,
    truncated: outcome.truncated,
    raw: outcome.raw,
    invalid: outcome.invalid,
    ...(field !== undefined ? { field } : {}),
  };
}

const PLAIN_HEAD = '{"answer":';

/**
 * The common case, decoded by one JSON.parse of the string literal instead of the character
 * decoder: arguments that are exactly `{"answer":` (spaces allowed) + one JSON string literal
 * + `}`, so `answer` is the only key and its value is complete. The decoder gives the same text
 * for such input, escapes and lone surrogates included (tests/policies/final-answer-plain.test.ts);
 * anything else (a second key, a cut-off value, text after it) takes the decoder. undefined: not
 * this case.
 */
function plainAnswer(rawArgs: string): string | undefined {
  const last = rawArgs.length - 1;
  if (!rawArgs.startsWith(PLAIN_HEAD) || rawArgs.charCodeAt(last) !== 125 /* } */) return undefined;
  let i = PLAIN_HEAD.length;
  while (rawArgs.charCodeAt(i) === 32) i++;
  if (rawArgs.charCodeAt(i) !== 34 || rawArgs.charCodeAt(last - 1) !== 34 || last - 1 <= i) return undefined;
  try {
    const v: unknown = JSON.parse(rawArgs.slice(i, last));
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
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
